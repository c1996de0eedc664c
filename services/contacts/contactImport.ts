import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm';
import type { EventTriggers } from '../events/eventTriggers';
import { jobRepository, type JobError } from '../../db/jobs/jobRepository';
import { jobUploadRepository } from '../../db/jobs/jobUploadRepository';
import { compareInCollationC, contactRepository, contactValueRefusal, type ContactUpsert, type RecordedEvent } from '../../db/contacts/contactRepository';
import { CsvFileError, csvRowToUpsert, readCsvRecords, type CsvHeader } from './csvImport';
import { ContactJobFailure } from './contactJobFailure';

/** Rows per transaction: big enough to be fast, small enough that a retry redoes little. */
export const IMPORT_BATCH_SIZE = 1000;

/** What a row error says when the database refused the row's values. */
const ROW_REFUSAL_MESSAGES = {
  dataLimits: 'The contact data would exceed 100 keys or 64 KB',
  invalidValue: 'A value in this row cannot be stored',
} as const;

/** Why the database refused one row's write, if it is the row's fault (see contactValueRefusal). */
function rowRefusal(err: unknown): string | undefined {
  const refusal = contactValueRefusal(err);
  return refusal && ROW_REFUSAL_MESSAGES[refusal];
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

export interface ContactImportDeps {
  orm: Orm;
  eventTriggers: EventTriggers;
}

/** How the import tells whoever runs it that a batch is committed, and learns that it is cancelled (a Temporal activity's heartbeats). */
export interface ContactImportControl {
  /** After each committed batch, with the data rows committed so far; a throw (the job was cancelled) ends the import with that error. */
  batchCommitted(processed: number): void;
}

/**
 * Imports the job's CSV from where the job record says it stopped, one transaction per batch,
 * reporting after each. The file streams from its stored chunks through the parser (only a chunk
 * and a batch of rows in memory). A repeated run (worker killed, database blip) reads past the
 * rows already committed and resumes at the first batch not yet committed: no row is lost or
 * counted twice. Marks the job RUNNING and, after the last row, COMPLETED itself: the caller runs
 * it only while it holds an import slot, so the job is QUEUED until it gets one and RUNNING only
 * while it holds it. Throws ContactJobFailure when the job cannot succeed.
 */
export async function importContacts(deps: ContactImportDeps, jobId: string, control: ContactImportControl): Promise<{ processed: number }> {
  const { orm, eventTriggers } = deps;
  const em = orm.em.fork();
  const job = await jobRepository.get(em, jobId);
  if (!job) throw new ContactJobFailure('JobNotFound', `Job ${jobId} does not exist`);
  const uploadId = await jobUploadRepository.findForJob(em, jobId);
  if (!uploadId) throw new ContactJobFailure('UploadMissing', `The upload of job ${jobId} is missing`);
  await jobRepository.markRunning(em, jobId);
  // Data rows committed so far; the record is the truth, not this run's memory.
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
    control.batchCommitted(committed);
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
    if (err instanceof CsvFileError) throw new ContactJobFailure('InvalidCsv', err.message);
    throw err;
  }
  // Done while holding the import slot, so a job is RUNNING exactly while it holds one.
  await jobRepository.finish(em, jobId, 'COMPLETED');
  return { processed: committed };
}
