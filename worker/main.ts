/** The worker process: runs Mailroom's workflows and activities until SIGINT/SIGTERM, then drains. */
import { Client, Connection } from '@temporalio/client';
import { loadConfig, requireSetting } from '../lib/config';
import { createLogger, flushLogger } from '../lib/logger';
import { createOrm } from '../db/orm';
import { createMailTransport } from '../mail/mailTransport';
import { createWorker, describeConfig } from './createWorker';
import { ensureSchedules } from './schedules';
import { installTemporalRuntime } from './temporalLogging';
import { createEventTriggers } from '../db/events/eventTriggers';

async function main() {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'worker' });
  // The Runtime's default shutdown signals (SIGINT, SIGTERM) make every worker stop polling and
  // wait up to shutdownGraceTime for running activities.
  installTemporalRuntime(logger);
  const orm = await createOrm(requireSetting(config.databaseUrl, 'DATABASE_URL'));
  const mail = createMailTransport({ smtpUrl: config.smtpUrl, orm, logger });
  const { worker, importWorker, connection } = await createWorker({ config, orm, mail, logger, eventTriggers: createEventTriggers(logger) });

  const clientConnection = await Connection.connect({ address: requireSetting(config.temporalAddress, 'TEMPORAL_ADDRESS') });
  await ensureSchedules(new Client({ connection: clientConnection, namespace: config.temporalNamespace }), config.temporalTaskQueue);
  await clientConnection.close();

  logger.info({ ...describeConfig(config), mailTransport: mail.kind }, 'worker started');
  await Promise.all([worker.run(), importWorker.run()]);
  logger.info('worker stopped; closing connections');
  await mail.close();
  await orm.close();
  await connection.close();
  flushLogger(logger);
}

main().catch((err) => {
  // eslint-disable-next-line no-console
  console.error(JSON.stringify({ level: 'fatal', msg: 'worker crashed', error: String(err?.stack ?? err) }));
  process.exit(1);
});
