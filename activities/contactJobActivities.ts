import { Context, ApplicationFailure } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActivityDeps } from './deps';
import { jobRepository, type JobError } from '../db/jobs/jobRepository';
import { CsvFileError, csvRowToUpsert, readCsvRecords, type CsvHeader } from '../services/contacts/csvImport';
import { jobUploadRepository } from '../db/jobs/jobUploadRepository';
import { compareInCollationC, contactRepository, type ContactUpsert, type RecordedEvent } from '../db/contacts/contactRepository';

/** Rows per transaction: big enough to be fast, small enough that a retry redoes little. */
export const IMPORT_BATCH_SIZE = 1000;

/**
 * Why the database refused one row's write, if it is about the row's values: the data limits
 * (CHECK, 23514) or a value it cannot take (class 22, data exception). Anything else (a lost
 * connection, a deadlock) is not the row's fault and fails the attempt, to be retried.
 */
function rowRefusal(err: unknown): string | undefined {
  const code = (err as { code?: unknown }).code;
  if (code === '23514') return 'The contact data would exceed 100 keys or 64 KB';
  if (typeof code === 'string' && code.startsWith('22')) return 'A value in this row cannot be stored';
  return undefined;
}

/**
 * Upserts a batch; if the database refuses it for a row's values, retries row by row under
 * savepoints so one bad row becomes a row error instead of failing the batch.
 */
async function upsertBatch(tx: EntityManager, projectId: string, items: Array<{ upsert: ContactUpsert; row: number }>) {
  const errors: JobError[] = [];
  const events: RecordedEvent[] = [];
  try {
    const result = await tx.transactional((inner) =>
      contactRepository.upsertManyByEmail(
        inner,
        projectId,
        items.map((i) => i.upsert),
        'import',
      ),
    );
    return { succeeded: items.length, errors, events: result.events };
  } catch (err) {
    if (!rowRefusal(err)) throw err;
  }
  let succeeded = 0;
  // In the order the batch statement takes its locks (see contactRepository), for the same reason.
  const byEmail = [...items].sort((a, b) => compareInCollationC(a.upsert.email, b.upsert.email));
  for (const item of byEmail) {
    try {
      const result = await tx.transactional((inner) => contactRepository.upsertManyByEmail(inner, projectId, [item.upsert], 'import'));
      events.push(...result.events);
      succeeded++;
    } catch (err) {
      const refusal = rowRefusal(err);
      if (!refusal) throw err;
      errors.push({ row: item.row, email: item.upsert.email, error: refusal });
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
     * batch, heartbeating after each. The file streams from its stored chunks through the parser
     * (only a chunk and a batch of rows in memory). A retry (worker killed, database blip) reads
     * past the rows already committed and resumes at the first batch not yet committed: no row is
     * lost or counted twice. Marks the job RUNNING and, after the last row, COMPLETED itself: on
     * the import task queue the activity starts only when the worker has an import slot free, so
     * the job is QUEUED until it gets one and RUNNING only while it holds it.
     */
    async importContactsBatches(jobId: string): Promise<{ processed: number }> {
      const em = orm.em.fork();
      const job = await jobRepository.get(em, jobId);
      if (!job) throw ApplicationFailure.nonRetryable(`Job ${jobId} does not exist`, 'JobNotFound');
      const uploadId = await jobUploadRepository.findForJob(em, jobId);
      if (!uploadId) throw ApplicationFailure.nonRetryable(`The upload of job ${jobId} is missing`, 'UploadMissing');
      await jobRepository.markRunning(em, jobId);
      const ctx = Context.current();
      // Data rows committed so far; the record is the truth, not this attempt's memory.
      let committed = job.processed;
      let batch: Array<{ header: CsvHeader; cells: string[]; rowNumber: number }> = [];

      /** Commits `batch` (the rows after `committed`); answers false once the job is no longer RUNNING. */
      const commitBatch = async (): Promise<boolean> => {
        const outcome = await em.fork().transactional(async (tx) => {
          const progress = await jobRepository.lockProgress(tx, jobId);
          if (!progress || progress.status !== 'RUNNING') return { running: false as const };
          // Another attempt got further: continue from the record.
          if (progress.processed !== committed) return { running: true as const, committed: progress.processed };
          const valid: Array<{ upsert: ContactUpsert; row: number }> = [];
          const errors: JobError[] = [];
          for (const { header, cells, rowNumber } of batch) {
            const parsed = csvRowToUpsert(header, cells, rowNumber);
            if ('error' in parsed) errors.push(parsed.error);
            else valid.push({ upsert: parsed.upsert, row: rowNumber });
          }
          const result = await upsertBatch(tx, job.projectId, valid);
          errors.push(...result.errors);
          errors.sort((a, b) => (a.row ?? 0) - (b.row ?? 0));
          await jobRepository.recordBatch(tx, jobId, { processed: batch.length, succeeded: result.succeeded, failed: errors.length, errors });
          return { running: true as const, committed: committed + batch.length, events: result.events };
        });
        batch = [];
        if (!outcome.running) return false;
        if (outcome.events) await eventTriggers.afterEventsRecorded(job.projectId, outcome.events);
        committed = outcome.committed;
        ctx.heartbeat({ processed: committed });
        // Throws if the workflow asked to cancel (delivered with the heartbeat response).
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
        return true;
      };

      try {
        for await (const row of readCsvRecords(jobUploadRepository.chunks(em, uploadId))) {
          // Data row n (1-based) is row n + 1 of the file; rows up to `committed` are done.
          if (row.rowNumber - 1 <= committed) continue;
          batch.push(row);
          if (batch.length === IMPORT_BATCH_SIZE && !(await commitBatch())) return { processed: committed };
        }
        if (batch.length && !(await commitBatch())) return { processed: committed };
      } catch (err) {
        if (err instanceof CsvFileError) throw ApplicationFailure.nonRetryable(err.message, 'InvalidCsv');
        throw err;
      }
      // Done while holding the import slot, so a job is RUNNING exactly while it holds one.
      await jobRepository.finish(em, jobId, 'COMPLETED');
      return { processed: committed };
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
          affected = await tx.execute(`delete from contacts where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid) returning id`, [
            job.projectId,
            idsJson,
          ]);
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
