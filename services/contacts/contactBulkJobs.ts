import type { Orm } from '../../db/orm';
import type { EventTriggers } from '../events/eventTriggers';
import { jobRepository, type JobError } from '../../db/jobs/jobRepository';
import { contactRepository, type RecordedEvent } from '../../db/contacts/contactRepository';
import { deleteContacts } from '../../db/contacts/contactDeletion';
import { ContactJobFailure } from './contactJobFailure';

export interface ContactBulkJobDeps {
  orm: Orm;
  eventTriggers: EventTriggers;
}

/**
 * Subscribes, unsubscribes or deletes the job's contacts in one transaction; each subscription
 * flip records its event (source `bulk`, with the job's id). Ids that name no contact of the
 * project are the job's errors. Runs once: a job already past its first batch, or no longer
 * RUNNING, answers its recorded counts. Throws ContactJobFailure when the job does not exist.
 */
export async function runBulkContactJob(deps: ContactBulkJobDeps, jobId: string): Promise<{ succeeded: number; failed: number }> {
  const { orm, eventTriggers } = deps;
  const em = orm.em.fork();
  const job = await jobRepository.get(em, jobId);
  if (!job) throw new ContactJobFailure('JobNotFound', `Job ${jobId} does not exist`);
  const ids = (job.input.contactIds as string[]) ?? [];
  const outcome = await em.transactional(async (tx) => {
    const progress = await jobRepository.lockProgress(tx, jobId);
    if (!progress || progress.processed > 0 || progress.status !== 'RUNNING') return null;
    let found: string[];
    let events: RecordedEvent[] = [];
    if (job.type === 'BULK_DELETE') {
      found = await deleteContacts(tx, job.projectId, { ids });
    } else {
      const subscribed = job.type === 'BULK_SUBSCRIBE';
      ({ found, events } = await contactRepository.setSubscriptionById(tx, job.projectId, ids, subscribed, { source: 'bulk', detail: { jobId } }));
    }
    const foundIds = new Set(found);
    const errors: JobError[] = [...new Set(ids)].filter((id) => !foundIds.has(id)).map((contactId) => ({ contactId, error: 'Contact not found' }));
    await jobRepository.recordBatch(tx, jobId, { processed: ids.length, succeeded: foundIds.size, failed: errors.length, errors });
    return { succeeded: foundIds.size, failed: errors.length, events };
  });
  if (!outcome) return { succeeded: job.succeeded, failed: job.failed };
  await eventTriggers.afterEventsRecorded(job.projectId, outcome.events);
  return { succeeded: outcome.succeeded, failed: outcome.failed };
}
