import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';

/**
 * GET /config (no auth): which integrations this instance has. Only integrations Mailroom
 * implements and that are configured report enabled; there is no OAuth provider, billing or
 * object storage integration yet, so those say so.
 */
export function configRoutes({ config }: ApiDeps) {
  const router = new Router<AppState>();
  router.get('/config', (ctx) => {
    ctx.body = {
      publicUrl: config.publicUrl,
      signups: { enabled: !config.disableSignups },
      smtp: { enabled: Boolean(config.smtpUrl) },
      localOutbox: { enabled: !config.smtpUrl },
      oauth: { enabled: false, providers: [] },
      billing: { enabled: false },
      objectStorage: { enabled: false },
      limits: { rateLimitPerMinute: config.rateLimitPerMinute, idempotencyKeyTtlHours: config.idempotencyKeyTtlHours },
    };
  });
  return router;
}
