import type { EntityManager } from '@mikro-orm/postgresql';

export interface ExistingIdempotencyKey {
  request: string;
  statusCode: number | null;
  createdAt: Date;
}

export const idempotencyKeyRepository = {
  /**
   * Claims the key for this request. Exactly one of any number of concurrent claims wins (the
   * primary key decides); an expired key is taken over as if it were new.
   */
  async claim(em: EntityManager, projectId: string, key: string, request: string, ttlHours: number): Promise<boolean> {
    const rows = await em.execute(
      `insert into idempotency_keys (project_id, key, request, expires_at)
       values (?, ?, ?, now() + make_interval(secs => ?))
       on conflict (project_id, key) do update
         set request = excluded.request, status_code = null, created_at = now(), expires_at = excluded.expires_at
         where idempotency_keys.expires_at <= now()
       returning 1`,
      [projectId, key, request, ttlHours * 3600],
    );
    return rows.length === 1;
  },

  async find(em: EntityManager, projectId: string, key: string): Promise<ExistingIdempotencyKey | null> {
    const rows = await em.execute<Array<{ request: string; status_code: number | null; created_at: Date }>>(
      `select request, status_code, created_at from idempotency_keys where project_id = ? and key = ?`,
      [projectId, key],
    );
    return rows.length ? { request: rows[0].request, statusCode: rows[0].status_code, createdAt: new Date(rows[0].created_at) } : null;
  },

  async complete(em: EntityManager, projectId: string, key: string, statusCode: number): Promise<void> {
    await em.execute(`update idempotency_keys set status_code = ? where project_id = ? and key = ?`, [statusCode, projectId, key]);
  },

  /** A request that ended in a 4xx did nothing, so its key may be used again. */
  async release(em: EntityManager, projectId: string, key: string): Promise<void> {
    await em.execute(`delete from idempotency_keys where project_id = ? and key = ?`, [projectId, key]);
  },
};
