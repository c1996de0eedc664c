import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';

/**
 * GET /config (no auth): which integrations this instance has. Only integrations Mailroom
 * implements and that are configured report enabled; there is no OAuth provider yet. `billing`
 * and `objectStorage` are the booleans of contract sections 16 and 17: billing is on with
 * STRIPE_SECRET_KEY; object storage when uploads go to an S3 bucket (S3_URL or S3_BUCKET) rather
 * than DATA_DIR/uploads.
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
      billing: Boolean(config.stripe),
      objectStorage: config.s3 !== null,
      limits: { rateLimitPerMinute: config.rateLimitPerMinute, idempotencyKeyTtlHours: config.idempotencyKeyTtlHours },
    };
  });
  return router;
}
