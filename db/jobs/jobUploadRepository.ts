import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Uploaded import files, kept in PostgreSQL so any worker on any host can read them. A file is
 * written as it streams in, in chunks of at most UPLOAD_CHUNK_BYTES, so neither the API nor the
 * worker ever holds more than a chunk of it. An upload belongs to no job until the file proved
 * valid; `claim` then ties it to the job in the transaction that creates the job.
 */
export const UPLOAD_CHUNK_BYTES = 256 * 1024;

/** An upload nobody claimed after this long was left by an API process that stopped mid-upload. */
const UNCLAIMED_UPLOAD_MAX_AGE = '1 hour';

/**
 * Uploads that served their purpose: their import ended (COMPLETED, FAILED, CANCELLED) at least
 * `?` days ago, or nobody claimed them (see UNCLAIMED_UPLOAD_MAX_AGE). Driven from job_uploads,
 * which holds only the uploads still kept, so the look stays small however many jobs there are.
 */
const SPENT_UPLOADS = `
  select u.id from job_uploads u join jobs j on j.id = u.job_id
  where j.status in ('COMPLETED', 'FAILED', 'CANCELLED') and coalesce(j.completed_at, j.created_at) < now() - make_interval(days => ?)
  union all
  select u.id from job_uploads u where u.job_id is null and u.created_at < now() - interval '${UNCLAIMED_UPLOAD_MAX_AGE}'`;

export const jobUploadRepository = {
  /** Starts an upload (and removes stale unclaimed ones, a cheap scan of a partial index). */
  async begin(em: EntityManager, projectId: string, filename: string | null): Promise<string> {
    await em.execute(`delete from job_uploads where job_id is null and created_at < now() - interval '${UNCLAIMED_UPLOAD_MAX_AGE}'`);
    const [row] = await em.execute(`insert into job_uploads (project_id, filename) values (?, ?) returning id`, [projectId, filename]);
    return row.id;
  },

  async appendChunk(em: EntityManager, uploadId: string, seq: number, bytes: Buffer): Promise<void> {
    await em.execute(`insert into job_upload_chunks (upload_id, seq, bytes) values (?, ?, ?)`, [uploadId, seq, bytes]);
  },

  async claim(em: EntityManager, uploadId: string, jobId: string): Promise<void> {
    await em.execute(`update job_uploads set job_id = ? where id = ?`, [jobId, uploadId]);
  },

  /** Drops an upload and its chunks (a refused file). */
  async discard(em: EntityManager, uploadId: string): Promise<void> {
    await em.execute(`delete from job_uploads where id = ?`, [uploadId]);
  },

  async findForJob(em: EntityManager, jobId: string): Promise<string | null> {
    const rows = await em.execute(`select id from job_uploads where job_id = ?`, [jobId]);
    return rows.length ? rows[0].id : null;
  },

  /**
   * Removes at most `limit` chunks of spent uploads (SPENT_UPLOADS, `endedDays` after their import
   * ended); answers how many went. The chunks go first, a bounded number per statement, because
   * removing an upload row would remove all its chunks (megabytes each) in one statement.
   */
  async deleteSpentChunks(em: EntityManager, endedDays: number, limit: number): Promise<number> {
    const [row] = await em.execute(
      `with doomed as (
         select c.upload_id, c.seq from (${SPENT_UPLOADS}) u join job_upload_chunks c on c.upload_id = u.id limit ?
       ),
       gone as (
         delete from job_upload_chunks c using doomed d where c.upload_id = d.upload_id and c.seq = d.seq returning 1
       )
       select count(*)::int as n from gone`,
      [endedDays, limit],
    );
    return row.n;
  },

  /** Removes at most `limit` spent uploads whose chunks are gone already (deleteSpentChunks); answers how many went. */
  async deleteSpentUploads(em: EntityManager, endedDays: number, limit: number): Promise<number> {
    const [row] = await em.execute(
      `with gone as (
         delete from job_uploads where id in (
           select u.id from (${SPENT_UPLOADS}) u where not exists (select 1 from job_upload_chunks c where c.upload_id = u.id) limit ?)
         returning 1
       )
       select count(*)::int as n from gone`,
      [endedDays, limit],
    );
    return row.n;
  },

  /** The upload's bytes in order, one chunk at a time (the next is read only when asked for). */
  async *chunks(em: EntityManager, uploadId: string): AsyncGenerator<Buffer> {
    for (let seq = 0; ; seq++) {
      const rows = await em.execute(`select bytes from job_upload_chunks where upload_id = ? and seq = ?`, [uploadId, seq]);
      if (!rows.length) return;
      yield Buffer.from(rows[0].bytes);
    }
  },
};

/**
 * Collects a stream's pieces into chunks of UPLOAD_CHUNK_BYTES (socket reads are much smaller)
 * and writes each with `write`, numbering them from 0.
 */
export class UploadChunker {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private seq = 0;

  constructor(private readonly write: (seq: number, bytes: Buffer) => Promise<void>) {}

  async add(piece: Buffer): Promise<void> {
    this.pending.push(piece);
    this.pendingBytes += piece.length;
    while (this.pendingBytes >= UPLOAD_CHUNK_BYTES) {
      const all = Buffer.concat(this.pending);
      this.pending = [all.subarray(UPLOAD_CHUNK_BYTES)];
      this.pendingBytes = all.length - UPLOAD_CHUNK_BYTES;
      await this.write(this.seq++, all.subarray(0, UPLOAD_CHUNK_BYTES));
    }
  }

  async flush(): Promise<void> {
    if (!this.pendingBytes) return;
    const rest = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    await this.write(this.seq++, rest);
  }
}
