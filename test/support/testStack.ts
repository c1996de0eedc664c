import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger, type Logger } from '../../lib/logger';
import { ensureDatabase, dropDatabase } from '../../launcher/embeddedPostgres';
import { runMigrations } from '../../db/migrate';
import { createOrm, type Orm } from '../../db/orm';
import { startApiServer, type RunningApi } from '../../api/server';
import type { SmtpListenerPorts } from '../../api/smtp';
import type { SnsFetcher } from '../../mail/sns/snsFetcher';
import { createMailTransport, type MailTransport } from '../../mail/mailTransport';
import { createMessageBuilder } from '../../mail/mime/messageBuildPool';
import { createWorker } from '../../worker/createWorker';
import { ensureSchedules } from '../../worker/schedules';
import { installTemporalRuntime } from '../../worker/temporalLogging';
import { HttpClient } from './http';
import { createClientConnection } from '../../temporal/client';
import { temporalConnectionOptions } from '../../temporal/connectionOptions';
import { spawnService, type ChildService } from './processes';
import { createEventTriggers, type EventTriggers } from '../../services/events/eventTriggers';

export interface TestStack {
  config: Config;
  databaseUrl: string;
  api: RunningApi;
  http: HttpClient;
  /** The worker's ORM and mail transport (what activities use); through `workerDatabaseUrl` if given. */
  orm: Orm;
  mail: MailTransport;
  temporal: Client;
  /** The in-process workers (none with `worker: false`), e.g. to see that no activity is running. */
  workers: Worker[];
  /** Every JSON log line the API and worker wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  logger: Logger;
  eventTriggers: EventTriggers;
  stop(): Promise<void>;
}

export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: process.env.MAILROOM_TEST_TEMPORAL_ADDRESS!,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: `test-${crypto.randomBytes(6).toString('hex')}`,
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-data-')),
    SECRET: crypto.randomBytes(24).toString('base64url'),
    LOG_LEVEL: 'info',
    PORT: '0',
    PUBLIC_URL: 'http://mailroom.test',
    SHUTDOWN_TIMEOUT_MS: '5000',
    // A worker process a test starts runs at the API's priority: its product default (10) puts it
    // behind everything else on the machine, and here that is the other test files' processes,
    // which would starve it for no reason the product has (test/platform/workerPriority.test.ts
    // covers the setting itself; the webhook worker keeps its own, WEBHOOK_WORKER_NICE).
    WORKER_NICE: '0',
    // SMTP roles listen only in the tests that start them (startTestStack's `smtpPorts`).
    INBOUND_SMTP_PORT: '0',
    SUBMISSION_SMTP_PORT: '0',
    ...overrides,
  };
}

/** A throwaway database with every migration applied. */
export async function createTestDatabase(): Promise<string> {
  const name = `mailroom_test_${crypto.randomBytes(6).toString('hex')}`;
  const url = await ensureDatabase(process.env.MAILROOM_TEST_PG_SERVER_URL!, name);
  await runMigrations(url);
  return url;
}

export async function dropTestDatabase(url: string): Promise<void> {
  await dropDatabase(process.env.MAILROOM_TEST_PG_SERVER_URL!, new URL(url).pathname.slice(1));
}

/**
 * Everything a test file talks to, for real: its own PostgreSQL database, the API on a loopback
 * port, and a worker on its own Temporal task queue.
 */
export async function startTestStack(
  options: {
    env?: Record<string, string>;
    worker?: boolean;
    /** Settings of the API alone (e.g. its TEMPORAL_ADDRESS through a proxy a test cuts), over `env`. */
    apiEnv?: Record<string, string>;
    /** The API's DATABASE_URL made from the test database's (e.g. through a proxy a test cuts). */
    apiDatabaseUrl?: (databaseUrl: string) => string;
    /** The worker's DATABASE_URL (its ORM, `orm` here) made from the test database's, as `apiDatabaseUrl`. */
    workerDatabaseUrl?: (databaseUrl: string) => string;
    /** SMTP roles the API starts, e.g. `{ submission: 0 }` on a free port (api.smtp says which). */
    smtpPorts?: Partial<SmtpListenerPorts>;
    /** Start the API's inbound SMTP listener on a free port (`api.smtp.inbound.port`). */
    inboundSmtp?: boolean;
    /** How the API fetches SNS signing certificates (tests sign SNS messages with a key they hold). */
    snsFetch?: SnsFetcher;
  } = {},
): Promise<TestStack> {
  const databaseUrl = await createTestDatabase();
  const env = { ...testEnv(options.env), DATABASE_URL: databaseUrl };
  const config = loadConfig(env);
  const logs: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: config.logLevel,
    name: 'test',
    destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
  });
  // Only where a worker will run: the Runtime shuts down when its last worker does, but one that
  // never had a worker stays up and keeps the test process from exiting.
  if (options.worker !== false) installTemporalRuntime(logger);

  // One trigger point shared by the API and the worker, as listeners see every event in production.
  const eventTriggers = createEventTriggers(logger);
  const apiOwn = { ...options.apiEnv, ...(options.apiDatabaseUrl ? { DATABASE_URL: options.apiDatabaseUrl(databaseUrl) } : {}) };
  const api = await startApiServer(Object.keys(apiOwn).length ? loadConfig({ ...env, ...apiOwn }) : config, logger, {
    host: '127.0.0.1',
    eventTriggers,
    smtpPorts: { ...options.smtpPorts, ...(options.inboundSmtp ? { inbound: 0 } : {}) },
    snsFetch: options.snsFetch,
  });
  const orm = await createOrm(options.workerDatabaseUrl ? options.workerDatabaseUrl(databaseUrl) : databaseUrl, {}, logger);
  // As the worker process does: messages built and signed on MAIL_BUILD_THREADS threads (1 by default).
  const messageBuilder = createMessageBuilder(config.mailBuildThreads);
  const mail = createMailTransport({ smtpUrl: config.smtpUrl, orm, logger, builder: messageBuilder });
  // Campaigns get their own, larger pool of SMTP connections.
  const campaignMail = createMailTransport({ smtpUrl: config.smtpUrl, orm, logger, maxConnections: config.campaignSmtpConnections, builder: messageBuilder });
  const connection = await createClientConnection(temporalConnectionOptions(config), false);
  const temporal = new Client({ connection, namespace: config.temporalNamespace });

  let workers: Worker[] = [];
  let workerConnection: NativeConnection | undefined;
  let closeWebhookWakeups = async () => {};
  let running: Promise<unknown> | undefined;
  if (options.worker !== false) {
    const created = await createWorker({ config, orm, mail, campaignMail, logger, eventTriggers });
    workers = created.all;
    workerConnection = created.connection;
    closeWebhookWakeups = async () => created.webhookWakeups?.close();
    running = Promise.all(workers.map((w) => w.run()));
    await ensureSchedules(temporal, config.temporalTaskQueue);
  }

  return {
    config,
    databaseUrl,
    api,
    http: new HttpClient(api.url),
    orm,
    mail,
    temporal,
    workers,
    logs,
    logger,
    eventTriggers,
    async stop() {
      for (const worker of workers) worker.shutdown();
      await running;
      await closeWebhookWakeups();
      // The workers' native connection: left open, it keeps the Temporal Runtime, and the process, alive.
      await workerConnection?.close();
      await api.close();
      await mail.close();
      await campaignMail.close();
      await messageBuilder.close();
      await orm.close();
      await connection.close();
      await dropTestDatabase(databaseUrl);
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A worker process of its own against the stack's database and task queue (for the tests that
 * kill it), started and polling when this resolves. `env` adds to or overrides the stack's settings.
 */
export async function startStackWorker(stack: TestStack, env: Record<string, string>, startTimeoutMs: number): Promise<ChildService> {
  const worker = spawnService('worker/main.ts', {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.config.temporalAddress!,
    TEMPORAL_TASK_QUEUE: stack.config.temporalTaskQueue,
    DATA_DIR: stack.config.dataDir,
    SECRET: stack.config.secret,
    LOG_LEVEL: 'info',
    WORKER_NICE: '0', // as in testEnv
    ...env,
  });
  try {
    await worker.waitForLine((l) => l.msg === 'worker started', startTimeoutMs);
  } catch (err) {
    worker.kill('SIGKILL');
    throw err;
  }
  return worker;
}
