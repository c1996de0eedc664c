import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';

/**
 * GET /config (no auth): which integrations this instance has. Only integrations Mailroom
 * implements and that are configured report enabled; billing is on with STRIPE_SECRET_KEY; there
 * is no OAuth provider or object storage integration yet, so those say so.
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
      billing: { enabled: Boolean(config.stripe) },
      objectStorage: { enabled: false },
      limits: { rateLimitPerMinute: config.rateLimitPerMinute, idempotencyKeyTtlHours: config.idempotencyKeyTtlHours },
    };
  });
  return router;
}
