import { Context, ApplicationFailure } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActivityDeps } from './deps';
import { jobRepository, type JobError } from '../db/jobs/jobRepository';
import { CsvFileError, csvRowToUpsert, parseContactsCsv } from '../db/contacts/csvImport';
import { contactRepository, type ContactUpsert, type RecordedEvent } from '../db/contacts/contactRepository';

/** Rows per transaction: big enough to be fast, small enough that a retry redoes little. */
export const IMPORT_BATCH_SIZE = 1000;

function isDataLimitViolation(err: unknown): boolean {
  return (err as { code?: string }).code === '23514';
}

/**
 * Upserts a batch; if the database refuses it (a row's merged data breaks the limits), retries
 * row by row under savepoints so one bad row becomes a row error instead of failing the batch.
 */
async function upsertBatch(tx: EntityManager, projectId: string, items: Array<{ upsert: ContactUpsert; row: number }>) {
  const errors: JobError[] = [];
  const events: RecordedEvent[] = [];
  try {
    const result = await tx.transactional((inner) => contactRepository.upsertManyByEmail(inner, projectId, items.map((i) => i.upsert), 'import'));
    return { succeeded: items.length, errors, events: result.events };
  } catch (err) {
    if (!isDataLimitViolation(err)) throw err;
  }
  let succeeded = 0;
  for (const item of items) {
    try {
      const result = await tx.transactional((inner) => contactRepository.upsertManyByEmail(inner, projectId, [item.upsert], 'import'));
      events.push(...result.events);
      succeeded++;
    } catch (err) {
      if (!isDataLimitViolation(err)) throw err;
      errors.push({ row: item.row, email: item.upsert.email, error: 'The contact data would exceed 100 keys or 64 KB' });
    }
  }
  return { succeeded, errors, events };
}

export function createContactJobActivities({ orm, eventTriggers }: ActivityDeps) {
  return {
    async markJobRunning(jobId: string): Promise<void> {
      await jobRepository.markRunning(orm.em.fork(), jobId);
    },

    async finishJob(jobId: string, status: 'COMPLETED' | 'FAILED' | 'CANCELLED', error?: string): Promise<void> {
      await jobRepository.finish(orm.em.fork(), jobId, status, error);
    },

    /**
     * Imports the job's CSV from where the job record says it stopped, one transaction per
     * batch, heartbeating after each. A retry (worker killed, database blip) resumes at the first
     * batch not yet committed: no row is lost or counted twice.
     */
    async importContactsBatches(jobId: string): Promise<{ processed: number }> {
      const em = orm.em.fork();
      const job = await jobRepository.get(em, jobId);
      if (!job) throw ApplicationFailure.nonRetryable(`Job ${jobId} does not exist`, 'JobNotFound');
      const content = await jobRepository.upload(em, jobId);
      if (!content) throw ApplicationFailure.nonRetryable(`The upload of job ${jobId} is missing`, 'UploadMissing');
      let csv;
      try {
        csv = parseContactsCsv(content);
      } catch (err) {
        if (err instanceof CsvFileError) throw ApplicationFailure.nonRetryable(err.message, 'InvalidCsv');
        throw err;
      }
      const ctx = Context.current();
      let offset = job.processed;
      while (offset < csv.rows.length) {
        const slice = csv.rows.slice(offset, offset + IMPORT_BATCH_SIZE);
        const outcome = await em.fork().transactional(async (tx) => {
          const progress = await jobRepository.lockProgress(tx, jobId);
          // Another attempt got further (or the job ended): continue from the record, not from memory.
          if (!progress || progress.processed !== offset || progress.status !== 'RUNNING') return { skipTo: progress?.status === 'RUNNING' ? progress.processed : csv.rows.length };
          const valid: Array<{ upsert: ContactUpsert; row: number }> = [];
          const errors: JobError[] = [];
          slice.forEach((cells, i) => {
            const rowNumber = offset + i + 2;
            const parsed = csvRowToUpsert(csv, cells, rowNumber);
            if ('error' in parsed) errors.push(parsed.error);
            else valid.push({ upsert: parsed.upsert, row: rowNumber });
          });
          const result = await upsertBatch(tx, job.projectId, valid);
          errors.push(...result.errors);
          errors.sort((a, b) => (a.row ?? 0) - (b.row ?? 0));
          await jobRepository.recordBatch(tx, jobId, { processed: slice.length, succeeded: result.succeeded, failed: errors.length, errors });
          return { skipTo: offset + slice.length, events: result.events };
        });
        if (outcome.events) await eventTriggers.afterEventsRecorded(job.projectId, outcome.events);
        offset = outcome.skipTo;
        ctx.heartbeat({ processed: offset });
        // Throws if the workflow asked to cancel (delivered with the heartbeat response).
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
      }
      return { processed: offset };
    },

    /** Subscribes, unsubscribes or deletes the job's contacts in one transaction; flips record their events. */
    async runBulkContactJob(jobId: string): Promise<{ succeeded: number; failed: number }> {
      const em = orm.em.fork();
      const job = await jobRepository.get(em, jobId);
      if (!job) throw ApplicationFailure.nonRetryable(`Job ${jobId} does not exist`, 'JobNotFound');
      const ids = (job.input.contactIds as string[]) ?? [];
      const outcome = await em.transactional(async (tx) => {
        const progress = await jobRepository.lockProgress(tx, jobId);
        if (!progress || progress.processed > 0 || progress.status !== 'RUNNING') return null;
        const idsJson = JSON.stringify(ids);
        let affected: Array<{ id: string }>;
        let events: RecordedEvent[] = [];
        if (job.type === 'BULK_DELETE') {
          affected = await tx.execute(
            `delete from contacts where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid) returning id`,
            [job.projectId, idsJson],
          );
        } else {
          const subscribe = job.type === 'BULK_SUBSCRIBE';
          const rows = await tx.execute<Array<{ id: string; changed: boolean }>>(
            `with target as (
               select id, subscribed from contacts
               where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid) for update),
             changed as (
               update contacts c set subscribed = ?, updated_at = now() from target t
               where c.id = t.id and t.subscribed <> ? returning c.id)
             select t.id, (t.id in (select id from changed)) as changed from target t`,
            [job.projectId, idsJson, subscribe, subscribe],
          );
          affected = rows;
          const flipped = rows.filter((r) => r.changed).map((r) => r.id);
          if (flipped.length) {
            events = (
              await tx.execute<Array<{ id: string; contact_id: string; name: string; created_at: Date }>>(
                `insert into events (project_id, contact_id, name, source, data)
                 select ?, (jsonb_array_elements_text(?::jsonb))::uuid, ?, 'SYSTEM', ?::jsonb returning id, contact_id, name, created_at`,
                [job.projectId, JSON.stringify(flipped), subscribe ? 'contact.subscribed' : 'contact.unsubscribed', JSON.stringify({ source: 'bulk', jobId })],
              )
            ).map((e) => ({ id: e.id, contactId: e.contact_id, name: e.name, createdAt: new Date(e.created_at) }));
          }
        }
        const found = new Set(affected.map((r) => r.id));
        const errors: JobError[] = [...new Set(ids)].filter((id) => !found.has(id)).map((contactId) => ({ contactId, error: 'Contact not found' }));
        await jobRepository.recordBatch(tx, jobId, { processed: ids.length, succeeded: found.size, failed: errors.length, errors });
        return { succeeded: found.size, failed: errors.length, events };
      });
      if (!outcome) return { succeeded: job.succeeded, failed: job.failed };
      await eventTriggers.afterEventsRecorded(job.projectId, outcome.events);
      return { succeeded: outcome.succeeded, failed: outcome.failed };
    },
  };
}
export type ContactJobActivities = ReturnType<typeof createContactJobActivities>;
