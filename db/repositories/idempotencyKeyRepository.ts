import type { EntityManager } from '@mikro-orm/postgresql';

export interface ExistingIdempotencyKey {
  request: string;
  statusCode: number | null;
  createdAt: Date;
  /** What the first request was answered, when its front door keeps it (the SMTP relay's email ids); null otherwise. */
  response: unknown;
}

export const idempotencyKeyRepository = {
  /**
   * Claims the key for this request. Exactly one of any number of concurrent claims wins (the
   * primary key decides); an expired key is taken over as if it were new. `response`: what the
   * request will answer when it succeeds, kept from the start by a front door that knows it before
   * acting (the SMTP relay's email ids), so a claim its process left behind can be finished.
   */
  async claim(em: EntityManager, projectId: string, key: string, request: string, ttlHours: number, response: unknown = null): Promise<boolean> {
    const rows = await em.execute(
      `insert into idempotency_keys (project_id, key, request, expires_at, response)
       values (?, ?, ?, now() + make_interval(secs => ?), ?)
       on conflict (project_id, key) do update
         set request = excluded.request, status_code = null, response = excluded.response, created_at = now(), expires_at = excluded.expires_at
         where idempotency_keys.expires_at <= now()
       returning 1`,
      [projectId, key, request, ttlHours * 3600, response === null ? null : JSON.stringify(response)],
    );
    return rows.length === 1;
  },

  async find(em: EntityManager, projectId: string, key: string): Promise<ExistingIdempotencyKey | null> {
    const rows = await em.execute<Array<{ request: string; status_code: number | null; created_at: Date; response: unknown }>>(
      `select request, status_code, created_at, response from idempotency_keys where project_id = ? and key = ?`,
      [projectId, key],
    );
    return rows.length
      ? { request: rows[0].request, statusCode: rows[0].status_code, createdAt: new Date(rows[0].created_at), response: rows[0].response ?? null }
      : null;
  },

  /** `response`: what a repeat of the request is to be answered (kept as JSON), when the front door answers repeats. */
  async complete(em: EntityManager, projectId: string, key: string, statusCode: number, response: unknown = null): Promise<void> {
    await em.execute(`update idempotency_keys set status_code = ?, response = ? where project_id = ? and key = ?`, [
      statusCode,
      response === null ? null : JSON.stringify(response),
      projectId,
      key,
    ]);
  },

  /** A request that ended in a 4xx did nothing, so its key may be used again. */
  async release(em: EntityManager, projectId: string, key: string): Promise<void> {
    await em.execute(`delete from idempotency_keys where project_id = ? and key = ?`, [projectId, key]);
  },

  /** Removes at most `limit` keys past their TTL (the retention); answers how many went. */
  async deleteExpired(em: EntityManager, limit: number): Promise<number> {
    const [row] = await em.execute(
      `with gone as (
         delete from idempotency_keys where (project_id, key) in (select project_id, key from idempotency_keys where expires_at < now() limit ?)
         returning 1
       )
       select count(*)::int as n from gone`,
      [limit],
    );
    return row.n;
  },
};
