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
 * Routes the Temporal SDK's own logs (workflow `log.*` calls included) into our JSON logger.
 * The Runtime is process-wide and can be installed once; later calls are no-ops.
 */
export function installTemporalRuntime(logger: Logger): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('INFO', (entry) => {
        logger[levelMap[entry.level]]({ ...(entry.meta ?? {}), source: 'temporal' }, entry.message);
      }),
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
