import { Context, ApplicationFailure } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { jobRepository } from '../db/jobs/jobRepository';
import { importContacts } from '../services/contacts/contactImport';
import { runBulkContactJob } from '../services/contacts/contactBulkJobs';
import { ContactJobFailure } from '../services/contacts/contactJobFailure';

/** A job that cannot succeed fails for good; anything else is retried with the activity's policy. */
async function failingForGood<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ContactJobFailure) throw ApplicationFailure.nonRetryable(err.message, err.kind);
    throw err;
  }
}

export function createContactJobActivities({ orm, eventTriggers }: ActivityDeps) {
  const services = { orm, eventTriggers };
  return {
    async markJobRunning(jobId: string): Promise<void> {
      await jobRepository.markRunning(orm.em.fork(), jobId);
    },

    async finishJob(jobId: string, status: 'COMPLETED' | 'FAILED' | 'CANCELLED', error?: string): Promise<void> {
      await jobRepository.finish(orm.em.fork(), jobId, status, error);
    },

    /**
     * The job's CSV import (services/contacts/contactImport.ts), heartbeating after each batch; a
     * retried attempt resumes after the last committed batch. On the import task queue the
     * activity starts only when the worker has an import slot free, which is what keeps a job
     * QUEUED until it gets one.
     */
    async importContactsBatches(jobId: string): Promise<{ processed: number }> {
      const context = Context.current();
      return failingForGood(() =>
        importContacts(services, jobId, {
          batchCommitted: (processed) => {
            context.heartbeat({ processed });
            // The workflow's cancel arrives with a heartbeat's response.
            if (context.cancellationSignal.aborted) throw context.cancellationSignal.reason;
          },
        }),
      );
    },

    /** Subscribes, unsubscribes or deletes the job's contacts (services/contacts/contactBulkJobs.ts). */
    async runBulkContactJob(jobId: string): Promise<{ succeeded: number; failed: number }> {
      return failingForGood(() => runBulkContactJob(services, jobId));
    },
  };
}
export type ContactJobActivities = ReturnType<typeof createContactJobActivities>;
