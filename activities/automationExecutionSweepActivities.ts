import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { executionRepository } from '../db/automations/executionRepository';
import { signalWaitingExecution, startExecution } from '../services/automation/executionStarts';

/** Older than any normal path from the event to the start or the signal. */
const GRACE_SECONDS = 30;
/** How far back events are looked at for executions never created. */
const LOOKBACK_SECONDS = 15 * 60;
const PER_SWEEP = 2000;

export function createAutomationExecutionSweepActivities({ orm, config, logger }: ActivityDeps) {
  return {
    /**
     * Repairs what a process that died mid-way leaves (see services/automation/executionTriggers.ts):
     * events of enabled workflows' triggers that got no execution get one; executions recorded
     * but never started are started; events a waiting execution waits for, recorded since its
     * wait began, are handed to it again (the workflow ignores one it has). Starts and signals go
     * through the worker's own client under the ids the API uses, so nothing runs twice.
     */
    async sweepExecutions(): Promise<{ created: number; started: number; signalled: number }> {
      const context = Context.current();
      const temporal = { client: context.client, taskQueue: config.temporalTaskQueue };
      const em = orm.em.fork();
      const created = await executionRepository.createForMissedEvents(em, GRACE_SECONDS, LOOKBACK_SECONDS, PER_SWEEP);
      const unstarted = await executionRepository.findUnstarted(em, GRACE_SECONDS, PER_SWEEP);
      const toStart = new Map([...created, ...unstarted].map((e) => [e.id, e]));
      let started = 0;
      let tried = 0;
      for (const execution of toStart.values()) {
        if (await startExecution(temporal, execution)) started++;
        if (++tried % 50 === 0) context.heartbeat({ tried });
      }
      const arrivals = await executionRepository.missedWaitEvents(em, GRACE_SECONDS, PER_SWEEP);
      for (const arrival of arrivals) await signalWaitingExecution(temporal, arrival);
      if (created.length || started || arrivals.length) {
        logger.warn({ created: created.length, started, signalled: arrivals.length }, 'execution sweep repaired executions a process left behind');
      }
      return { created: created.length, started, signalled: arrivals.length };
    },
  };
}

export type AutomationExecutionSweepActivities = ReturnType<typeof createAutomationExecutionSweepActivities>;
