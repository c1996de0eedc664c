import { DefaultLogger, Runtime, type ActivityInterceptorsFactory, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../lib/logger';

const levelMap: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Routes the Temporal SDK's own logs (workflow `log.*` calls included) into our JSON logger,
 * and the SDK core's too: without forwarding, the Rust core prints coloured plain text (say
 * "WARN temporalio_client::retry: ..." during an outage) between our JSON lines. Core lines keep
 * their level and carry the core's module as `target`.
 * The Runtime is process-wide and can be installed once; later calls are no-ops.
 */
export function installTemporalRuntime(logger: Logger): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('INFO', (entry) => {
        const { spanContexts, ...meta } = (entry.meta ?? {}) as Record<string, unknown>;
        const fields = Array.isArray(spanContexts) && spanContexts.length > 0 ? { ...meta, spanContexts } : meta;
        logger[levelMap[entry.level]]({ ...fields, source: 'temporal' }, entry.message);
      }),
      telemetryOptions: { logging: { filter: { core: 'INFO', other: 'WARN' }, forward: {} } },
    });
  } catch (err) {
    if (!/already/i.test((err as Error).message)) throw err;
  }
}

/** One structured line per failed activity attempt, with what an operator needs to find the run. */
export function activityFailureLogging(logger: Logger): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        try {
          return await next(input);
        } catch (err) {
          const info = ctx.info;
          logger.error(
            {
              event: 'activity.failed',
              activityType: info.activityType,
              activityId: info.activityId,
              attempt: info.attempt,
              workflowType: info.workflowType,
              workflowId: info.workflowExecution?.workflowId,
              runId: info.workflowExecution?.runId,
              error: (err as Error)?.message ?? String(err),
            },
            'activity failed',
          );
          throw err;
        }
      },
    },
  });
}
