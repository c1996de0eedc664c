import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { mailModeOf } from '../../services/domains/senderDomainLookup';
import { describedRoutes } from '../openapi/describedRouter';
import { configResponse } from '../schemas/operationsSchemas';

/**
 * GET /config (no auth): which integrations this instance has. Only integrations Mailroom
 * implements and that are configured report enabled; there is no OAuth provider yet. `billing`
 * and `objectStorage` are the booleans of contract sections 16 and 17: billing is on with
 * STRIPE_SECRET_KEY; object storage when uploads go to an S3 bucket (S3_URL or S3_BUCKET) rather
 * than DATA_DIR/uploads. `localOutbox.senderDomain` names the sender domain every project may use
 * with no DNS while mail stays in the outbox (services/domains/senderDomainLookup.ts), null otherwise.
 * `smtpRelay`: the SMTP submission listener (contract 20) is listening. `temporalUi`: the Temporal UI
 * (TEMPORAL_UI_URL; `npm start` sets it for its dev server) and the namespace, so the dashboard links
 * each workflow execution to its run there.
 */
export function configRoutes({ config, smtpStatus }: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Operations', access: 'none' });
  const outbox = mailModeOf(config) === 'outbox';
  route.get(
    '/config',
    {
      summary: 'Get this instance’s configuration',
      description:
        'Which integrations this instance has: only those Mailroom implements and that are configured report enabled. ' +
        '`localOutbox.senderDomain` names the sender domain every project may use with no DNS while mail stays in the outbox. ' +
        '`smtpRelay` and `inbound` are true while the SMTP submission and inbound listeners listen; `smtpRelaySettings` says how to connect to the relay. ' +
        '`temporalUi` says where operators open a workflow execution’s run (TEMPORAL_UI_URL), null when unset.',
      responses: {
        200: {
          description: 'The configuration',
          schema: configResponse,
          example: {
            publicUrl: 'https://mail.example.com',
            signups: { enabled: true },
            smtp: { enabled: true },
            localOutbox: { enabled: false, senderDomain: null },
            smtpRelay: true,
            smtpRelaySettings: { host: 'mail.example.com', port: 2587, starttls: true, authWithoutTls: 'loopback' },
            oauth: { enabled: false, providers: [] },
            billing: false,
            objectStorage: false,
            inbound: false,
            limits: { rateLimitPerMinute: 1000, sessionRateLimitPerMinute: 1200, idempotencyKeyTtlHours: 24 },
            temporalUi: { url: 'http://localhost:8233', namespace: 'default' },
          },
        },
      },
    },
    (ctx) => {
      ctx.body = {
        publicUrl: config.publicUrl,
        signups: { enabled: !config.disableSignups },
        smtp: { enabled: !outbox },
        localOutbox: { enabled: outbox, senderDomain: outbox ? OUTBOX_SENDER_DOMAIN : null },
        // Read per request: true only while the submission listener listens (contract 20).
        smtpRelay: smtpStatus?.submission ?? false,
        smtpRelaySettings:
          smtpStatus?.submission && smtpStatus.submissionPort !== null
            ? {
                host: new URL(config.publicUrl).hostname,
                port: smtpStatus.submissionPort,
                starttls: config.smtpListeners.tls !== null,
                authWithoutTls: config.smtpListeners.submissionAllowInsecureAuth ? 'any' : 'loopback',
              }
            : null,
        oauth: { enabled: false, providers: [] },
        billing: Boolean(config.stripe),
        objectStorage: config.s3 !== null,
        // The inbound SMTP listener listens (contract 20).
        inbound: smtpStatus?.inbound ?? false,
        limits: {
          rateLimitPerMinute: config.rateLimitPerMinute,
          sessionRateLimitPerMinute: config.sessionRateLimitPerMinute,
          idempotencyKeyTtlHours: config.idempotencyKeyTtlHours,
        },
        temporalUi: config.temporalUiUrl ? { url: config.temporalUiUrl, namespace: config.temporalNamespace } : null,
      } satisfies z.input<typeof configResponse>;
    },
  );
  return router;
}
