import { CancellationScope, isCancellation, patched, proxyActivities, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import type { ContactJobActivities } from '../activities/contactJobActivities';
import { importTaskQueue } from '../temporal/taskQueues';

const bookkeeping = proxyActivities<ContactJobActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 30 },
});

const workOptions: ActivityOptions = {
  // Counted from when a worker starts the activity: waiting on the task queue is not included.
  startToCloseTimeout: '30 minutes',
  // A killed worker's batch is picked up again after this much silence.
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 50 },
};
const work = proxyActivities<ContactJobActivities>(workOptions);

/**
 * Imports started before this patch marked the job RUNNING from the workflow and ran the import on
 * the main task queue; they replay that way. Newer ones run it on the import task queue, where it
 * waits for an import slot, and the activity marks the job RUNNING when it starts.
 */
const IMPORT_SLOT_PATCH = 'import-on-own-task-queue';

/**
 * Runs `body` until the job record is in a terminal state, whatever happens; marks it RUNNING
 * first unless `body` does so itself.
 */
async function asJob(jobId: string, body: () => Promise<unknown>, options: { markRunning: boolean } = { markRunning: true }): Promise<void> {
  if (options.markRunning) await bookkeeping.markJobRunning(jobId);
  try {
    await body();
    await bookkeeping.finishJob(jobId, 'COMPLETED');
  } catch (err) {
    const cancelled = isCancellation(err);
    await CancellationScope.nonCancellable(() =>
      bookkeeping.finishJob(
        jobId,
        cancelled ? 'CANCELLED' : 'FAILED',
        cancelled ? undefined : (((err as Error).cause as Error)?.message ?? (err as Error).message),
      ),
    );
    throw err;
  }
}

/** `import-<jobId>`: imports the uploaded CSV in batches (see importContactsBatches). */
export async function importContactsWorkflow(input: { jobId: string }): Promise<void> {
  if (!patched(IMPORT_SLOT_PATCH)) {
    await asJob(input.jobId, () => work.importContactsBatches(input.jobId));
    return;
  }
  const imports = proxyActivities<ContactJobActivities>({ ...workOptions, taskQueue: importTaskQueue(workflowInfo().taskQueue) });
  await asJob(input.jobId, () => imports.importContactsBatches(input.jobId), { markRunning: false });
}

/** `bulk-<jobId>`: subscribes, unsubscribes or deletes up to 1,000 contacts. */
export async function bulkContactsWorkflow(input: { jobId: string }): Promise<void> {
  await asJob(input.jobId, () => work.runBulkContactJob(input.jobId));
}
