import path from 'node:path';
import fs from 'node:fs';
import crypto from 'node:crypto';
import { z } from 'zod';
import { parseDnsServers } from './dns/dnsResolver';
import { parseAllowedNetworks } from './webhooks/webhookAddressPolicy';
import { s3SettingsFromEnv, type S3Settings } from './objectStorage/s3Settings';

/**
 * The fewest history rows EXECUTION_STEPS_KEPT may keep per execution: more than one activity of
 * the walk runs (services/automation/executionWalk.ts, 25 steps), so a retried activity always
 * finds the rows of the steps it already ran; the partial index the retention reads
 * (workflow_execution_steps_deep_index) starts there too.
 */
export const MIN_EXECUTION_STEPS_KEPT = 50;

/** A whole number of `unit` in [min, max], with messages an operator can act on. */
function wholeNumber(min: number, max: number, unit: string) {
  return z.coerce
    .number({ invalid_type_error: `must be a whole number of ${unit}` })
    .refine((n) => !Number.isNaN(n), `must be a whole number of ${unit}`)
    .pipe(z.number().int(`must be a whole number of ${unit}`).min(min, `must be at least ${min} ${unit}`).max(max, `must be at most ${max} ${unit}`));
}

/**
 * Every setting Mailroom reads from the environment, in one place (contract section 1).
 * `DATABASE_URL` and `TEMPORAL_ADDRESS` are required by the API and worker processes;
 * the start command fills them in when it runs the embedded PostgreSQL and Temporal.
 */
const booleanFromEnv = z.enum(['true', 'false', '1', '0', 'yes', 'no', '']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  PUBLIC_URL: z.string().url().optional(),
  DATABASE_URL: z.string().min(1).optional(),
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('mailroom'),
  // Secure connections (temporal/connectionOptions.ts reads and checks these at start).
  TEMPORAL_TLS: booleanFromEnv.optional(),
  TEMPORAL_TLS_CERT: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY: z.string().min(1).optional(),
  TEMPORAL_TLS_CA: z.string().min(1).optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  TEMPORAL_API_KEY_FILE: z.string().min(1).optional(),
  TEMPORAL_CREATE_NAMESPACE: booleanFromEnv.default('false'),
  TEMPORAL_NAMESPACE_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
  // The Temporal UI operators open (the dashboard links each workflow execution to its run there); `npm start` sets it for its dev server.
  TEMPORAL_UI_URL: z.string().url().optional(),
  WORKER_HEALTH_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SMTP_URL: z.string().min(1).optional(),
  MAIL_FROM: z.string().min(3).optional(),
  // Mail in and the SMTP relay (contract 20): api/smtp/.
  INBOUND_SMTP_PORT: z.coerce.number().int().min(0).max(65535).default(2500),
  SUBMISSION_SMTP_PORT: z.coerce.number().int().min(0).max(65535).default(2587),
  SMTP_LISTEN_HOST: z.string().min(1).optional(),
  SMTP_TLS_CERT: z.string().min(1).optional(),
  SMTP_TLS_KEY: z.string().min(1).optional(),
  // RFC 5321 4.5.3.2: a server waits at least 5 minutes for a client's next command.
  SMTP_IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(60),
  INBOUND_MAX_BYTES: z.coerce.number().int().min(1024).max(1_073_741_824).default(10_485_760),
  INBOUND_MX_HOST: z
    .string()
    .regex(/^[a-z0-9.-]+$/i, 'must be a host name such as mx.example.com')
    .optional(),
  RETURN_PATH_SUBDOMAIN: z
    .string()
    .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i, 'must be one DNS label such as mr-bounces')
    .default('mr-bounces'),
  SUBMISSION_ALLOW_INSECURE_AUTH: booleanFromEnv.default('false'),
  DNS_SERVERS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const parsed = parseDnsServers(value);
      if ('servers' in parsed) return parsed.servers;
      ctx.addIssue({ code: 'custom', message: `"${parsed.invalid}" is not ip, ip:port or [ipv6]:port` });
      return z.NEVER;
    }),
  DNS_TIMEOUT_MS: z.coerce.number().int().min(50).max(60000).default(2500),
  SPF_INCLUDE: z
    .string()
    .regex(/^[a-z0-9._-]+\.[a-z0-9-]+$/i, 'must be a domain name such as amazonses.com')
    .optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  SECRET: z.string().min(16).optional(),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(1000),
  SESSION_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(1200),
  IDEMPOTENCY_KEY_TTL_HOURS: z.coerce.number().positive().default(24),
  // Retention (services/retention/retentionRules.ts): what the hourly cleanup removes, and when.
  IMPORT_FILE_RETENTION_DAYS: wholeNumber(0, 3650, 'days').default(7),
  INBOUND_RETENTION_DAYS: wholeNumber(1, 3650, 'days').default(30),
  EXECUTION_STEPS_KEPT: wholeNumber(MIN_EXECUTION_STEPS_KEPT, 1_000_000, 'steps').default(100),
  TEMP_FILE_MAX_AGE_HOURS: wholeNumber(1, 8760, 'hours').default(1),
  REQUEST_LOG_RETENTION_DAYS: wholeNumber(1, 365, 'days').default(7),
  DISABLE_SIGNUPS: booleanFromEnv.default('false'),
  WEBHOOK_ALLOW_PRIVATE: booleanFromEnv.default('false'),
  WEBHOOK_ALLOWED_NETWORKS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const parsed = parseAllowedNetworks(value);
      if ('networks' in parsed) return parsed.networks;
      ctx.addIssue({ code: 'custom', message: `"${parsed.invalid}" is not a CIDR block such as 10.0.5.0/24` });
      return z.NEVER;
    }),
  /** Contract 18: seconds before each retry of an outbound webhook message (8 attempts by default). */
  WEBHOOK_RETRY_DELAYS_SECONDS: z
    .string()
    .default('5,300,1800,7200,18000,36000,36000')
    .transform((value, ctx) => {
      const parts = value.split(',').map((part) => part.trim());
      const delays = parts.map(Number);
      if (parts.length >= 1 && parts.length <= 20 && delays.every((d, i) => parts[i] !== '' && Number.isInteger(d) && d >= 0 && d <= 604_800)) return delays;
      ctx.addIssue({ code: 'custom', message: 'must be 1-20 comma-separated whole numbers of seconds (at most 604800 each), such as 5,300,1800' });
      return z.NEVER;
    }),
  /** Contract 18: an endpoint whose attempts have all failed this long is disabled (a fraction of an hour is allowed). */
  WEBHOOK_DISABLE_AFTER_HOURS: z.coerce
    .number({ invalid_type_error: 'must be a number of hours' })
    .refine((n) => Number.isFinite(n) && n > 0 && n <= 8760, 'must be a number of hours above 0, at most 8760')
    .default(120),
  /** Contract 18: an outbound webhook attempt with no complete 2xx answer within this long fails (and is retried). */
  WEBHOOK_ATTEMPT_TIMEOUT_MS: wholeNumber(1000, 120_000, 'milliseconds').default(15000),
  /** How many messages one endpoint has in flight at once. */
  WEBHOOK_ENDPOINT_CONCURRENCY: wholeNumber(1, 100, 'requests').default(10),
  /** How many endpoints one worker delivers to at once (the webhook task queue's activity slots). */
  WEBHOOK_DELIVERY_SLOTS: wholeNumber(1, 10_000, 'endpoints').default(200),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(15000),
  API_SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10000),
  API_SHUTDOWN_NOTICE_MS: z.coerce.number().int().min(0).default(5000),
  IMPORT_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  WORKER_NICE: z.coerce.number().int().min(0).max(19).default(10),
  WORKER_ROLE: z.enum(['all', 'main', 'webhooks']).default('all'),
  WEBHOOK_WORKER_NICE: z.coerce.number().int().min(0).max(19).default(19),
  MAIL_BUILD_THREADS: z.coerce.number().int().min(0).max(64).default(1),
  CAMPAIGN_SMTP_CONNECTIONS: z.coerce.number().int().min(1).max(200).default(10),
  ATTACHMENTS_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(30 * 1024 * 1024)
    .default(10 * 1024 * 1024),
  // At most MAX_EMAILS_PER_DELIVERY (temporal/deliveryWorkflowStart.ts, which lib/ may not import):
  // a workflow's EmailIds search attribute names every email it carries, and 50 ids is what fits.
  DELIVERY_BATCH_MAX: z.coerce
    .number()
    .int()
    .min(1)
    .max(50, 'a delivery workflow carries at most 50 emails (its EmailIds search attribute must fit in 2 KB)')
    .default(50),
  DELIVERY_RETRY_DELAYS: z
    .string()
    .default('1m,5m,15m,1h,3h,6h,12h,24h,24h')
    .transform((value, ctx) => {
      const delays = parseDelayList(value);
      if (delays) return delays;
      ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of durations such as 30s,5m,1h' });
      return z.NEVER;
    }),
  SNS_TOPIC_ARNS: z
    .string()
    .optional()
    .transform((value) =>
      value
        ? value
            .split(',')
            .map((v) => v.trim())
            .filter(Boolean)
        : [],
    ),
  CAMPAIGN_RATE_PER_SECOND: z.coerce.number().int().min(0).max(100000).default(0),
  // For the durability tests only (test/campaigns/campaignDurability.test.ts, test/workflows/executionDurability.test.ts):
  // their worker process, killed mid-run, must cross continue-as-new with runs the API started.
  // The fast tier sets the workflows' own `maxHistoryEvents` input instead.
  CAMPAIGN_HISTORY_EVENTS: z.coerce.number().int().min(20).max(40000).optional(),
  EXECUTION_HISTORY_EVENTS: z.coerce.number().int().min(20).max(40000).optional(),
  TRACK_OPENS: booleanFromEnv.default('true'),
  TRACK_CLICKS: booleanFromEnv.default('true'),
  // Object storage for uploads: S3_URL alone, or S3_BUCKET with the others (lib/objectStorage/s3Settings.ts).
  S3_URL: z.string().min(1).optional(),
  S3_ENDPOINT: z.string().url().optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).optional(),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: booleanFromEnv.optional(),
  S3_KEY_PREFIX: z.string().min(1).optional(),
  // Billing (contract 17): off unless STRIPE_SECRET_KEY is set.
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  STRIPE_PRICE_ID: z.string().min(1).optional(),
  STRIPE_METER_EVENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, 'must be a Stripe meter event name')
    .default('mailroom_emails'),
  STRIPE_API_URL: z.string().url().optional(),
});

/** `30s,5m,1h,2d` → seconds; null when any item is not a duration. */
function parseDelayList(value: string): number[] | null {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  const out: number[] = [];
  for (const item of value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean)) {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(item);
    if (!match) return null;
    out.push(Number(match[1]) * units[match[2]]);
  }
  return out.length ? out : null;
}

export interface Config {
  port: number;
  publicUrl: string;
  databaseUrl: string | undefined;
  temporalAddress: string | undefined;
  temporalNamespace: string;
  temporalTaskQueue: string;
  temporalTls: TemporalTlsSettings;
  /** The Temporal Cloud API key itself, or undefined. */
  temporalApiKey: string | undefined;
  /** Register the namespace at start when it does not exist (self-hosted clusters). */
  temporalCreateNamespace: boolean;
  temporalNamespaceRetentionDays: number;
  /** The Temporal UI's address (TEMPORAL_UI_URL, no trailing slash), answered by GET /config; null when unset. */
  temporalUiUrl: string | null;
  /** The worker's own GET /health port; undefined = not served. */
  workerHealthPort: number | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  /** DNS_SERVERS in the form node's Resolver takes; empty = the system's resolvers. */
  dnsServers: string[];
  dnsTimeoutMs: number;
  /** The domain the suggested SPF record includes (the SMTP relay's SPF domain); unset suggests `a mx`. */
  spfInclude: string | undefined;
  dataDir: string;
  secret: string;
  rateLimitPerMinute: number;
  /** Contract 4: a budget per user for dashboard sessions' project calls, apart from the project's; 0 = none. */
  sessionRateLimitPerMinute: number;
  idempotencyKeyTtlHours: number;
  /** What the hourly cleanup keeps (services/retention/retentionRules.ts) and what a start removes. */
  retention: RetentionSettings;
  disableSignups: boolean;
  webhookAllowPrivate: boolean;
  /** WEBHOOK_ALLOWED_NETWORKS: CIDR blocks WEBHOOK steps may call although they are not public. */
  webhookAllowedNetworks: string[];
  /** Outbound webhooks (contract 18): retries, disabling, and how much is delivered at once. */
  webhooks: { retryDelaysSeconds: number[]; disableAfterHours: number; attemptTimeoutMs: number; endpointConcurrency: number; deliverySlots: number };
  logLevel: string;
  /** How long the worker lets running activities finish after SIGTERM. */
  shutdownTimeoutMs: number;
  /** How long the API keeps answering the requests it accepted after SIGTERM. */
  apiShutdownGraceMs: number;
  /**
   * After SIGTERM, how long the API goes on listening and answering everything (with /health at
   * 503 "draining") before it stops accepting connections; part of apiShutdownGraceMs.
   */
  apiShutdownNoticeMs: number;
  /** The SMTP listeners of contract 20 (api/smtp/): a port of 0 turns one off. */
  smtpListeners: SmtpListenerSettings;
  /** CSV imports one worker process runs at once; more wait in Temporal for a free slot. */
  importConcurrency: number;
  /** The worker process's CPU niceness (0–19): on shared cores the API's requests come first. */
  workerNice: number;
  /**
   * What a worker process runs: `all` (one process), `main` (everything but webhook delivery) or
   * `webhooks` (webhook delivery only, at `webhookWorkerNice`). `npm start` runs a `main` and a
   * `webhooks` process, so pushing webhooks takes the cores only when mail does not need them.
   */
  workerRole: 'all' | 'main' | 'webhooks';
  /** The CPU niceness (0–19) of a `webhooks` worker process. */
  webhookWorkerNice: number;
  /** Threads that build and DKIM-sign the worker's messages; 0 = on its main thread. */
  mailBuildThreads: number;
  /** SMTP connections the worker's campaign sending keeps open at most (transactional mail has its own 5). */
  campaignSmtpConnections: number;
  /** Decoded size of one send's attachments together (contract 9: 10 MB by default). */
  attachmentsMaxBytes: number;
  /** Emails one delivery workflow carries; 1 = a `send-<emailId>` workflow per email. */
  deliveryBatchMax: number;
  /** Waits (seconds) between delivery attempts after temporary failures; their count is the retry budget. */
  deliveryRetryDelaysSeconds: number[];
  trackOpens: boolean;
  trackClicks: boolean;
  /** Campaign mail per second per campaign when its project sets no cap; null = as fast as the relay takes it. */
  campaignRatePerSecond: number | null;
  /** History events after which a campaign send continues as new; null = the workflow's default (CAMPAIGN_HISTORY_EVENTS: for the durability tests). */
  campaignHistoryEvents: number | null;
  /** History events after which an automation execution continues as new; null = the workflow's default (EXECUTION_HISTORY_EVENTS: for the durability tests). */
  executionHistoryEvents: number | null;
  /** SNS topics /webhooks/sns accepts (subscriptions and notices); empty = any topic with a valid signature. */
  snsTopicArns: string[];
  /** Where uploads go when not under DATA_DIR/uploads; null = local files. */
  s3: S3Settings | null;
  /** Stripe billing; null = billing off (its endpoints answer 404; the monthly caps still apply). */
  stripe: StripeSettings | null;
}

export interface SmtpListenerSettings {
  /** INBOUND_SMTP_PORT: mail for verified domains; 0 = off. */
  inboundPort: number;
  /** SUBMISSION_SMTP_PORT: the relay for clients holding a secret key; 0 = off. */
  submissionPort: number;
  /** SMTP_LISTEN_HOST: the address both bind; undefined = all interfaces. */
  host: string | undefined;
  /** SMTP_TLS_CERT / SMTP_TLS_KEY (PEM files): both listeners offer STARTTLS when set. */
  tls: { certFile: string; keyFile: string } | null;
  /** SMTP_IDLE_TIMEOUT_SECONDS: a client of either listener silent this long (while the server waits for it) is answered 421 and disconnected. */
  idleTimeoutSeconds: number;
  /** INBOUND_MAX_BYTES: the largest message the inbound listener takes (advertised with SIZE). */
  inboundMaxBytes: number;
  /** INBOUND_MX_HOST: when set, domains list MX and return-path records and outbound mail's envelope sender is the return path. */
  inboundMxHost: string | null;
  /** RETURN_PATH_SUBDOMAIN: the subdomain of each sender domain that receives bounces (with INBOUND_MX_HOST). */
  returnPathSubdomain: string;
  /** SUBMISSION_ALLOW_INSECURE_AUTH: AUTH without TLS from non-loopback addresses. */
  submissionAllowInsecureAuth: boolean;
}

export interface RetentionSettings {
  /** Days an import's uploaded CSV is kept after the import ended (0 = removed at the next cleanup). */
  importFileDays: number;
  /** Days a received message's raw content (and so its text, HTML and attachments) is kept; its record stays. */
  inboundDays: number;
  /** History rows kept per automation execution: its newest steps (the execution row keeps its summary). */
  executionStepsKept: number;
  /** Temporary files a crashed process left are removed at start once this old. */
  tempFileMaxAgeHours: number;
  /** Days a project's request log (GET /requests) keeps a request. */
  requestLogDays: number;
}

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** The price a Checkout Session subscribes to. */
  priceId: string;
  /** The Billing Meter event the hourly usage report sends. */
  meterEventName: string;
  /** Where the Stripe API is (STRIPE_API_URL; tests point it at a local server). */
  api: { host: string; port: number; protocol: 'http' | 'https' } | null;
}

/**
 * TLS settings as given: cert, key and ca are each a file path or the PEM text itself
 * (temporal/connectionOptions.ts tells them apart and validates them).
 */
export interface TemporalTlsSettings {
  /** TEMPORAL_TLS: true/false forces TLS on/off; undefined = on when any other TLS setting or an API key is set. */
  enabled: boolean | undefined;
  cert: string | undefined;
  key: string | undefined;
  ca: string | undefined;
  serverName: string | undefined;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings in the environment mean "unset", as in most twelve-factor apps.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  if (e.API_SHUTDOWN_NOTICE_MS >= e.API_SHUTDOWN_GRACE_MS) {
    throw new ConfigError(
      `Invalid configuration: API_SHUTDOWN_NOTICE_MS (${e.API_SHUTDOWN_NOTICE_MS}) must be less than API_SHUTDOWN_GRACE_MS (${e.API_SHUTDOWN_GRACE_MS}), which it is part of`,
    );
  }
  if (Boolean(e.SMTP_TLS_CERT) !== Boolean(e.SMTP_TLS_KEY)) {
    // One without the other would start the SMTP listeners without STARTTLS, silently.
    throw new ConfigError('Invalid configuration: SMTP_TLS_CERT and SMTP_TLS_KEY go together: set both (PEM files) or neither');
  }
  const dataDir = path.resolve(e.DATA_DIR);
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    port: e.PORT,
    publicUrl,
    databaseUrl: e.DATABASE_URL,
    temporalAddress: e.TEMPORAL_ADDRESS,
    temporalNamespace: e.TEMPORAL_NAMESPACE,
    temporalTaskQueue: e.TEMPORAL_TASK_QUEUE,
    temporalTls: {
      enabled: e.TEMPORAL_TLS,
      cert: e.TEMPORAL_TLS_CERT,
      key: e.TEMPORAL_TLS_KEY,
      ca: e.TEMPORAL_TLS_CA,
      serverName: e.TEMPORAL_TLS_SERVER_NAME,
    },
    temporalApiKey: readApiKey(e.TEMPORAL_API_KEY, e.TEMPORAL_API_KEY_FILE),
    temporalCreateNamespace: e.TEMPORAL_CREATE_NAMESPACE,
    temporalNamespaceRetentionDays: e.TEMPORAL_NAMESPACE_RETENTION_DAYS,
    temporalUiUrl: e.TEMPORAL_UI_URL ? e.TEMPORAL_UI_URL.replace(/\/+$/, '') : null,
    workerHealthPort: e.WORKER_HEALTH_PORT,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM ?? `Mailroom <no-reply@${new URL(publicUrl).hostname}>`,
    dnsServers: e.DNS_SERVERS,
    dnsTimeoutMs: e.DNS_TIMEOUT_MS,
    spfInclude: e.SPF_INCLUDE?.toLowerCase(),
    dataDir,
    secret: e.SECRET ?? readOrCreateSecret(dataDir),
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    sessionRateLimitPerMinute: e.SESSION_RATE_LIMIT_PER_MINUTE,
    idempotencyKeyTtlHours: e.IDEMPOTENCY_KEY_TTL_HOURS,
    retention: {
      importFileDays: e.IMPORT_FILE_RETENTION_DAYS,
      inboundDays: e.INBOUND_RETENTION_DAYS,
      executionStepsKept: e.EXECUTION_STEPS_KEPT,
      tempFileMaxAgeHours: e.TEMP_FILE_MAX_AGE_HOURS,
      requestLogDays: e.REQUEST_LOG_RETENTION_DAYS,
    },
    disableSignups: e.DISABLE_SIGNUPS,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    webhookAllowedNetworks: e.WEBHOOK_ALLOWED_NETWORKS,
    webhooks: {
      retryDelaysSeconds: e.WEBHOOK_RETRY_DELAYS_SECONDS,
      disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
      attemptTimeoutMs: e.WEBHOOK_ATTEMPT_TIMEOUT_MS,
      endpointConcurrency: e.WEBHOOK_ENDPOINT_CONCURRENCY,
      deliverySlots: e.WEBHOOK_DELIVERY_SLOTS,
    },
    logLevel: e.LOG_LEVEL,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    apiShutdownGraceMs: e.API_SHUTDOWN_GRACE_MS,
    apiShutdownNoticeMs: e.API_SHUTDOWN_NOTICE_MS,
    smtpListeners: {
      inboundPort: e.INBOUND_SMTP_PORT,
      submissionPort: e.SUBMISSION_SMTP_PORT,
      host: e.SMTP_LISTEN_HOST,
      tls: e.SMTP_TLS_CERT && e.SMTP_TLS_KEY ? { certFile: e.SMTP_TLS_CERT, keyFile: e.SMTP_TLS_KEY } : null,
      idleTimeoutSeconds: e.SMTP_IDLE_TIMEOUT_SECONDS,
      inboundMaxBytes: e.INBOUND_MAX_BYTES,
      inboundMxHost: e.INBOUND_MX_HOST ?? null,
      returnPathSubdomain: e.RETURN_PATH_SUBDOMAIN.toLowerCase(),
      submissionAllowInsecureAuth: e.SUBMISSION_ALLOW_INSECURE_AUTH,
    },
    importConcurrency: e.IMPORT_CONCURRENCY,
    workerNice: e.WORKER_NICE,
    workerRole: e.WORKER_ROLE,
    webhookWorkerNice: e.WEBHOOK_WORKER_NICE,
    mailBuildThreads: e.MAIL_BUILD_THREADS,
    campaignSmtpConnections: e.CAMPAIGN_SMTP_CONNECTIONS,
    attachmentsMaxBytes: e.ATTACHMENTS_MAX_BYTES,
    deliveryBatchMax: e.DELIVERY_BATCH_MAX,
    deliveryRetryDelaysSeconds: e.DELIVERY_RETRY_DELAYS,
    trackOpens: e.TRACK_OPENS,
    trackClicks: e.TRACK_CLICKS,
    snsTopicArns: e.SNS_TOPIC_ARNS,
    campaignRatePerSecond: e.CAMPAIGN_RATE_PER_SECOND || null,
    campaignHistoryEvents: e.CAMPAIGN_HISTORY_EVENTS ?? null,
    s3: s3Settings(e),
    stripe: stripeSettings(e),
    executionHistoryEvents: e.EXECUTION_HISTORY_EVENTS ?? null,
  };
}

function s3Settings(e: z.infer<typeof envSchema>): S3Settings | null {
  const settings = s3SettingsFromEnv({
    url: e.S3_URL,
    endpoint: e.S3_ENDPOINT,
    bucket: e.S3_BUCKET,
    region: e.S3_REGION,
    accessKeyId: e.S3_ACCESS_KEY_ID,
    secretAccessKey: e.S3_SECRET_ACCESS_KEY,
    forcePathStyle: e.S3_FORCE_PATH_STYLE,
    keyPrefix: e.S3_KEY_PREFIX,
  });
  if ('problem' in settings) throw new ConfigError(`Invalid configuration: ${settings.problem}`);
  return settings.s3;
}

function stripeSettings(e: z.infer<typeof envSchema>): StripeSettings | null {
  if (!e.STRIPE_SECRET_KEY) {
    if (e.STRIPE_WEBHOOK_SECRET || e.STRIPE_PRICE_ID)
      throw new ConfigError('STRIPE_WEBHOOK_SECRET and STRIPE_PRICE_ID need STRIPE_SECRET_KEY (billing is off without it)');
    return null;
  }
  const missing = [!e.STRIPE_WEBHOOK_SECRET && 'STRIPE_WEBHOOK_SECRET', !e.STRIPE_PRICE_ID && 'STRIPE_PRICE_ID'].filter(Boolean);
  if (missing.length) throw new ConfigError(`With STRIPE_SECRET_KEY set, ${missing.join(' and ')} must be set too`);
  let api: StripeSettings['api'] = null;
  if (e.STRIPE_API_URL) {
    const url = new URL(e.STRIPE_API_URL);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('STRIPE_API_URL must be an http(s) URL');
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    api = { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || (protocol === 'http' ? 80 : 443)), protocol };
  }
  return {
    secretKey: e.STRIPE_SECRET_KEY,
    webhookSecret: e.STRIPE_WEBHOOK_SECRET!,
    priceId: e.STRIPE_PRICE_ID!,
    meterEventName: e.STRIPE_METER_EVENT_NAME,
    api,
  };
}

/** TEMPORAL_API_KEY is the key itself; TEMPORAL_API_KEY_FILE names a file holding it (a mounted secret). */
function readApiKey(value: string | undefined, file: string | undefined): string | undefined {
  if (value && file) throw new ConfigError('Set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both');
  if (!file) return value;
  let key: string;
  try {
    key = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError(`TEMPORAL_API_KEY_FILE: cannot read ${file}: ${(err as Error).message}`);
  }
  if (!key) throw new ConfigError(`TEMPORAL_API_KEY_FILE: ${file} is empty`);
  return key;
}

/** The secret is generated once and kept under DATA_DIR so sessions and signed links survive restarts. */
function readOrCreateSecret(dataDir: string): string {
  const file = path.join(dataDir, 'secret');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = crypto.randomBytes(32).toString('base64url');
  try {
    // 'wx' fails if another process (API and worker start together) wrote it first.
    fs.writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(file, 'utf8').trim();
    throw err;
  }
}

export function requireSetting<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new ConfigError(`${name} must be set`);
  return value;
}
