import { z } from './zod';

const partState = z.enum(['ok', 'down']);

/**
 * GET /health, 200 and 503 alike: `status` ok when PostgreSQL and Temporal answer (and Temporal is
 * set up), degraded naming the part that does not, draining from SIGTERM on.
 */
export const healthResponse = z
  .object({
    status: z.enum(['ok', 'degraded', 'draining']),
    database: partState,
    temporal: partState,
  })
  .strict()
  .openapi('Health');

/** GET /config: which integrations this instance has. */
export const configResponse = z
  .object({
    publicUrl: z.string(),
    signups: z.object({ enabled: z.boolean() }).strict(),
    /** Mail goes out through the SMTP relay (false: it stays in the local outbox). */
    smtp: z.object({ enabled: z.boolean() }).strict(),
    /** The sender domain every project may use with no DNS while mail stays in the outbox; null otherwise. */
    localOutbox: z.object({ enabled: z.boolean(), senderDomain: z.string().nullable() }).strict(),
    /** The SMTP submission listener is listening. */
    smtpRelay: z.boolean(),
    smtpRelaySettings: z
      .object({
        host: z.string().describe('The host name of PUBLIC_URL: where clients usually reach the relay'),
        port: z.number().int().describe('The submission port (SUBMISSION_SMTP_PORT)'),
        starttls: z.boolean().describe('The relay offers STARTTLS (SMTP_TLS_CERT and SMTP_TLS_KEY are set)'),
        authWithoutTls: z
          .enum(['loopback', 'any'])
          .describe('Where AUTH is accepted without TLS: only from loopback addresses, or from any (SUBMISSION_ALLOW_INSECURE_AUTH)'),
      })
      .strict()
      .nullable()
      .describe('How to connect to the SMTP relay while it listens: any user name, a secret key of the project as the password; null while it does not listen'),
    /** No OAuth provider is implemented: always disabled, no providers. */
    oauth: z.object({ enabled: z.boolean(), providers: z.array(z.string()).max(0) }).strict(),
    /** Billing is on (STRIPE_SECRET_KEY). */
    billing: z.boolean(),
    /** Uploads go to an S3 bucket rather than DATA_DIR/uploads. */
    objectStorage: z.boolean(),
    /** The inbound SMTP listener is listening. */
    inbound: z.boolean(),
    limits: z.object({ rateLimitPerMinute: z.number().int(), sessionRateLimitPerMinute: z.number().int(), idempotencyKeyTtlHours: z.number() }).strict(),
    /** The Temporal UI operators use (TEMPORAL_UI_URL) and the namespace Mailroom runs in; null when no UI address is configured. */
    temporalUi: z
      .object({ url: z.string(), namespace: z.string() })
      .strict()
      .nullable()
      .describe(
        'Where operators look at Mailroom’s Temporal runs (TEMPORAL_UI_URL) and its namespace; a workflow execution’s run is at ' +
          '`<url>/namespaces/<namespace>/workflows/<temporalWorkflowId>`. Null when no UI address is configured.',
      ),
  })
  .strict()
  .openapi('InstanceConfig');
