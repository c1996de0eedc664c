import { log, workflowInfo, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

/** One structured log line per failed workflow run (the worker routes workflow logs to its JSON logger). */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        try {
          return await next(input);
        } catch (err) {
          const info = workflowInfo();
          const e = err as Error;
          // Continue-as-new and cancellation are not failures.
          if (e?.name !== 'ContinueAsNew' && e?.name !== 'CancelledFailure') {
            log.error('workflow failed', {
              event: 'workflow.failed',
              workflowType: info.workflowType,
              workflowId: info.workflowId,
              runId: info.runId,
              error: e?.message ?? String(err),
            });
          }
          throw err;
        }
      },
    },
  ],
});
