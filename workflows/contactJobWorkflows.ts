import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { ContactJobActivities } from '../activities/contactJobActivities';

const bookkeeping = proxyActivities<ContactJobActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 30 },
});

const work = proxyActivities<ContactJobActivities>({
  startToCloseTimeout: '30 minutes',
  // A killed worker's batch is picked up again after this much silence.
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 50 },
});

/** Runs `body` between RUNNING and a terminal state of the job record, whatever happens. */
async function asJob(jobId: string, body: () => Promise<unknown>): Promise<void> {
  await bookkeeping.markJobRunning(jobId);
  try {
    await body();
    await bookkeeping.finishJob(jobId, 'COMPLETED');
  } catch (err) {
    const cancelled = isCancellation(err);
    await CancellationScope.nonCancellable(() =>
      bookkeeping.finishJob(jobId, cancelled ? 'CANCELLED' : 'FAILED', cancelled ? undefined : ((err as Error).cause as Error)?.message ?? (err as Error).message),
    );
    throw err;
  }
}

/** `import-<jobId>`: imports the uploaded CSV in batches (see importContactsBatches). */
export async function importContactsWorkflow(input: { jobId: string }): Promise<void> {
  await asJob(input.jobId, () => work.importContactsBatches(input.jobId));
}

/** `bulk-<jobId>`: subscribes, unsubscribes or deletes up to 1,000 contacts. */
export async function bulkContactsWorkflow(input: { jobId: string }): Promise<void> {
  await asJob(input.jobId, () => work.runBulkContactJob(input.jobId));
}
