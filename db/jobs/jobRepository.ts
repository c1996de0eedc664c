import type { EntityManager } from '@mikro-orm/postgresql';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';

export type JobType = 'IMPORT' | 'BULK_SUBSCRIBE' | 'BULK_UNSUBSCRIBE' | 'BULK_DELETE';
export type JobStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';

export interface JobError {
  row?: number;
  email?: string;
  contactId?: string;
  error: string;
}

export interface JobRow {
  id: string;
  projectId: string;
  type: JobType;
  status: JobStatus;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  errors: JobError[];
  input: Record<string, unknown>;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}

/** The job record keeps the first 100 errors; the counts keep the rest. */
export const MAX_JOB_ERRORS = 100;

/** A `jobs` row as a statement returns it. */
export interface JobTableRow {
  id: string;
  project_id: string;
  type: JobType;
  status: JobStatus;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  /** jsonb, parsed by the driver. */
  errors: JobError[] | null;
  input: Record<string, unknown> | null;
  error: string | null;
  created_at: TimestampText;
  started_at: TimestampText | null;
  completed_at: TimestampText | null;
}

function toJob(row: JobTableRow): JobRow {
  return {
    id: row.id,
    projectId: row.project_id,
    type: row.type,
    status: row.status,
    total: row.total,
    processed: row.processed,
    succeeded: row.succeeded,
    failed: row.failed,
    errors: row.errors ?? [],
    input: row.input ?? {},
    error: row.error ?? null,
    createdAt: new Date(row.created_at),
    startedAt: dateOrNull(row.started_at),
    completedAt: dateOrNull(row.completed_at),
  };
}

export const jobRepository = {
  async create(em: EntityManager, job: { projectId: string; type: JobType; total: number; input?: Record<string, unknown> }): Promise<JobRow> {
    const [row] = await queryRows<JobTableRow>(em, `insert into jobs (project_id, type, total, input) values (?, ?, ?, ?::jsonb) returning *`, [
      job.projectId,
      job.type,
      job.total,
      JSON.stringify(job.input ?? {}),
    ]);
    return toJob(row);
  },

  async find(em: EntityManager, projectId: string, id: string, types: JobType[]): Promise<JobRow | null> {
    const rows = await queryRows<JobTableRow>(
      em,
      `select * from jobs where project_id = ? and id = ? and type in (select jsonb_array_elements_text(?::jsonb))`,
      [projectId, id, JSON.stringify(types)],
    );
    return rows.length ? toJob(rows[0]) : null;
  },

  async get(em: EntityManager, id: string): Promise<JobRow | null> {
    const rows = await queryRows<JobTableRow>(em, `select * from jobs where id = ?`, [id]);
    return rows.length ? toJob(rows[0]) : null;
  },

  async markRunning(em: EntityManager, id: string): Promise<void> {
    await em.execute(`update jobs set status = 'RUNNING', started_at = coalesce(started_at, now()) where id = ? and status in ('QUEUED', 'RUNNING')`, [id]);
  },

  /** Terminal states are final: a late retry of a finished job changes nothing. */
  async finish(em: EntityManager, id: string, status: 'COMPLETED' | 'FAILED' | 'CANCELLED', error?: string): Promise<void> {
    await em.execute(`update jobs set status = ?, error = ?, completed_at = now() where id = ? and status in ('QUEUED', 'RUNNING')`, [
      status,
      error ?? null,
      id,
    ]);
  },

  /**
   * Locks the job and tells whether the batch starting at `offset` is still to do. With
   * `recordBatch` in the same transaction this makes every batch count exactly once, however
   * often an activity is retried or a worker dies mid-batch.
   */
  async lockProgress(em: EntityManager, id: string): Promise<{ processed: number; status: JobStatus } | null> {
    const rows = await queryRows<Pick<JobTableRow, 'processed' | 'status'>>(em, `select processed, status from jobs where id = ? for update`, [id]);
    return rows.length ? { processed: rows[0].processed, status: rows[0].status } : null;
  },

  async recordBatch(em: EntityManager, id: string, batch: { processed: number; succeeded: number; failed: number; errors: JobError[] }): Promise<void> {
    await em.execute(
      `update jobs set processed = processed + ?, succeeded = succeeded + ?, failed = failed + ?,
         errors = case when jsonb_array_length(errors) >= ? then errors
                       else (select coalesce(jsonb_agg(e), '[]'::jsonb) from (
                              select e from jsonb_array_elements(errors || ?::jsonb) with ordinality as x(e, n) order by n limit ?) s)
                  end
       where id = ?`,
      [batch.processed, batch.succeeded, batch.failed, MAX_JOB_ERRORS, JSON.stringify(batch.errors), MAX_JOB_ERRORS, id],
    );
  },

  /** A job whose workflow could not be started: it never ran, so it leaves nothing behind. */
  async delete(em: EntityManager, id: string): Promise<void> {
    await em.execute(`delete from jobs where id = ?`, [id]);
  },
};
