/**
 * The worker process: waits for Temporal (it may start first), checks the namespace and search
 * attributes, then runs Mailroom's workflows and activities until SIGINT/SIGTERM, then drains.
 * WORKER_ROLE picks which: all of them, all but webhook delivery (`main`), or webhook delivery
 * alone (`webhooks`, at the lower CPU priority WEBHOOK_WORKER_NICE); `npm start` runs the last two.
 */
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig, requireSetting, type Config } from '../lib/config';
import { createLogger, flushLogger, type Logger } from '../lib/logger';
import { lowerWorkerPriority } from './processPriority';
import { createOrm } from '../db/orm';
import { createMailTransport } from '../mail/mailTransport';
import { createMessageBuilder } from '../mail/mime/messageBuildPool';
import { createWebhookWorker, createWorker, describeConfig } from './createWorker';
import { ensureSchedules } from './schedules';
import { installTemporalRuntime } from './temporalLogging';
import { createEventTriggers } from '../services/events/eventTriggers';
import { attachTrackedSegmentUpdates } from '../services/segments/trackedSegmentUpdates';
import { attachExecutionTriggers } from '../services/automation/executionTriggers';
import { describeTemporalConnection, temporalConnectionOptions, type TemporalConnectionOptions } from '../temporal/connectionOptions';
import { ensureNamespaceSetup } from '../temporal/namespaceSetup';
import { retryUntilTemporalAnswers, TemporalSetupError } from '../temporal/waitForTemporal';
import { startWorkerHealthServer } from './healthServer';
import { removeAbandonedWorkflowBundles } from './workflowBundle';

/** Connects (retrying with backoff while Temporal is unreachable) and checks the namespace setup. */
async function connectToTemporal(config: Config, options: TemporalConnectionOptions, logger: Logger, signal: AbortSignal): Promise<NativeConnection> {
  return retryUntilTemporalAnswers(
    async () => {
      const connection = await NativeConnection.connect(options);
      try {
        await ensureNamespaceSetup(connection, {
          namespace: config.temporalNamespace,
          createNamespace: config.temporalCreateNamespace,
          retentionDays: config.temporalNamespaceRetentionDays,
          logger,
        });
        await ensureSchedules(new Client({ connection, namespace: config.temporalNamespace }), config.temporalTaskQueue);
        return connection;
      } catch (err) {
        await connection.close().catch(() => undefined);
        throw err;
      }
    },
    { address: options.address, logger, signal },
  );
}

/** Workflow bundles of workers killed while starting (in the system's temporary directory), once TEMP_FILE_MAX_AGE_HOURS old. */
function removeLeftoverBundles(config: Config, logger: Logger): void {
  try {
    const removed = removeAbandonedWorkflowBundles(config.retention.tempFileMaxAgeHours * 3600_000);
    // Quiet when there was nothing: a start's first lines are for what matters (a bad setting).
    if (removed > 0) logger.info({ event: 'retention.temporary_files', removed }, `removed ${removed} abandoned workflow bundles`);
  } catch (err) {
    logger.warn({ err, event: 'retention.temporary_files' }, 'could not look for abandoned workflow bundles');
  }
}

async function main() {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'worker' });
  const webhooksOnly = config.workerRole === 'webhooks';
  const nice = lowerWorkerPriority(webhooksOnly ? config.webhookWorkerNice : config.workerNice, logger);
  // The Runtime's default shutdown signals (SIGINT, SIGTERM) make every worker stop polling and
  // wait up to shutdownGraceTime for running activities.
  installTemporalRuntime(logger);
  removeLeftoverBundles(config, logger);
  const connectionOptions = temporalConnectionOptions(config);
  const health = config.workerHealthPort === undefined ? undefined : await startWorkerHealthServer(config.workerHealthPort);
  if (health) logger.info({ port: health.port }, 'worker health endpoint listening');

  // A stop signal while still waiting for Temporal ends the wait; the Runtime handles it later on.
  const stopWaiting = new AbortController();
  const onSignal = () => stopWaiting.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let connection: NativeConnection;
  try {
    connection = await connectToTemporal(config, connectionOptions, logger, stopWaiting.signal);
  } catch (err) {
    if (!stopWaiting.signal.aborted) throw err;
    logger.info('worker stopped before Temporal answered');
    await health?.close();
    flushLogger(logger);
    return;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  const orm = await createOrm(requireSetting(config.databaseUrl, 'DATABASE_URL'), {}, logger);
  if (webhooksOnly) {
    // Webhook delivery alone: no mail, no workflows (WORKER_ROLE, worker/createWorker.ts).
    const { worker, all: workers, webhookWakeups, starvation } = await createWebhookWorker({ config, orm, logger, connection });
    health?.attach(worker, connection);
    logger.info({ ...describeConfig(config), ...describeTemporalConnection(connectionOptions), role: config.workerRole, nice }, 'worker started');
    await Promise.all(workers.map((w) => w.run()));
    logger.info('worker stopped; closing connections');
    await health?.close();
    await webhookWakeups?.close();
    starvation?.close();
    await orm.close();
    await connection.close();
    flushLogger(logger);
    return;
  }
  // Messages are built and signed off the main thread, which schedules, queries and hands over.
  const messageBuilder = createMessageBuilder(config.mailBuildThreads);
  const mail = createMailTransport({ smtpUrl: config.smtpUrl, orm, logger, builder: messageBuilder });
  // Campaigns get their own, larger pool of SMTP connections.
  const campaignMail = createMailTransport({ smtpUrl: config.smtpUrl, orm, logger, maxConnections: config.campaignSmtpConnections, builder: messageBuilder });
  const eventTriggers = createEventTriggers(logger);
  const segmentUpdates = attachTrackedSegmentUpdates(orm, eventTriggers, logger);
  // Events recorded by activities (email.sent, segment entries, UPDATE_CONTACT) start and wake executions too.
  const executionTriggers = attachExecutionTriggers(
    orm,
    eventTriggers,
    { client: new Client({ connection, namespace: config.temporalNamespace }), taskQueue: config.temporalTaskQueue },
    logger,
  );
  const { worker, all: workers, webhookWakeups } = await createWorker({ config, orm, mail, campaignMail, logger, connection, eventTriggers });
  health?.attach(worker, connection);

  logger.info(
    { ...describeConfig(config), ...describeTemporalConnection(connectionOptions), role: config.workerRole, mailTransport: mail.kind, nice },
    'worker started',
  );
  await Promise.all(workers.map((w) => w.run()));
  logger.info('worker stopped; closing connections');
  await health?.close();
  await webhookWakeups?.close();
  await segmentUpdates.close();
  await executionTriggers.close();
  await mail.close();
  await campaignMail.close();
  await messageBuilder.close();
  await orm.close();
  await connection.close();
  flushLogger(logger);
}

main().catch((err) => {
  // One JSON line on stdout like every other: an operator's instructions (TemporalSetupError,
  // ConfigError) as the message, anything unexpected with its stack.
  const known = err instanceof TemporalSetupError || err instanceof ConfigError;
  const line = known
    ? { level: 'fatal', time: new Date().toISOString(), service: 'worker', msg: err.message }
    : { level: 'fatal', time: new Date().toISOString(), service: 'worker', msg: 'worker crashed', error: String(err?.stack ?? err) };
  process.stdout.write(JSON.stringify(line) + '\n', () => process.exit(1));
});
