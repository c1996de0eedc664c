/** The API process: serves HTTP until SIGINT/SIGTERM, then drains in-flight requests and exits. */
import { loadConfig } from '../lib/config';
import { createLogger, flushLogger } from '../lib/logger';
import { startApiServer } from './server';
import { TemporalSetupError } from '../temporal/waitForTemporal';

async function main() {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'api' });
  const api = await startApiServer(config, logger);
  logger.info({ port: api.port, publicUrl: config.publicUrl }, 'api listening');
  // A Temporal setup that waiting cannot fix (say, search attributes Temporal Cloud will not let
  // us register) stops the API with the operator's instructions rather than failing every job.
  api.temporal.setup.catch((err: unknown) => {
    if (!(err instanceof TemporalSetupError)) return;
    logger.fatal({ event: 'temporal.setup_failed', namespace: config.temporalNamespace }, err.message);
    flushLogger(logger);
    process.exit(1);
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // SIGTERM is how orchestrators (Kubernetes, Docker, systemd) stop it, with a load balancer in
    // front: it keeps listening for API_SHUTDOWN_NOTICE_MS with /health at 503 so the balancer
    // stops sending before connections are refused. Ctrl-C (SIGINT) is a person waiting: no notice.
    const noticeMs = signal === 'SIGTERM' ? config.apiShutdownNoticeMs : 0;
    logger.info({ signal, graceMs: config.apiShutdownGraceMs, noticeMs }, 'api shutting down: draining in-flight requests');
    api
      .close({ noticeMs })
      .then(() => {
        logger.info('api stopped');
        flushLogger(logger);
        process.exit(0);
      })
      .catch((err) => {
        logger.error({ err }, 'api shutdown failed');
        flushLogger(logger);
        process.exit(1);
      });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  // eslint-disable-next-line no-console -- main() failed, perhaps before the logger existed: one JSON line straight to stderr
  console.error(JSON.stringify({ level: 'fatal', msg: 'api crashed', error: String(err?.stack ?? err) }));
  process.exit(1);
});
