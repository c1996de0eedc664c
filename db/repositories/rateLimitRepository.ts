import type { EntityManager } from '@mikro-orm/postgresql';
import { ProjectSchema, type Project } from '../entities/project';

export interface RateLimitHit {
  /** Requests counted in the current minute window, this one included. */
  current: number;
  /** Requests in the previous minute window. */
  previous: number;
  /** Milliseconds elapsed in the current window. */
  elapsedMs: number;
}

export const rateLimitRepository = {
  /**
   * Counts one request for the project in the shared table, so every API process sees the same
   * numbers, and returns what the sliding-window estimate needs. One statement, one round trip.
   */
  async hit(em: EntityManager, projectId: string): Promise<RateLimitHit> {
    const rows = await em.execute<Array<{ current: number; previous: number; elapsed_ms: number }>>(
      `with cur as (
         insert into rate_limit_windows (project_id, window_start, count)
         values (?, date_trunc('minute', now()), 1)
         on conflict (project_id, window_start) do update set count = rate_limit_windows.count + 1
         returning count, window_start
       )
       select cur.count as current,
              coalesce((select w.count from rate_limit_windows w
                        where w.project_id = ? and w.window_start = cur.window_start - interval '1 minute'), 0) as previous,
              (extract(epoch from (now() - cur.window_start)) * 1000)::int as elapsed_ms
       from cur`,
      [projectId, projectId],
    );
    const row = rows[0];
    return { current: row.current, previous: row.previous, elapsedMs: row.elapsed_ms };
  },

  /**
   * The key lookup and the request count in one round trip: every key-authenticated request
   * makes both, so this halves the statements in front of every endpoint.
   */
  async findProjectAndHit(
    em: EntityManager,
    keyColumn: 'public_key' | 'secret_key_hash',
    keyValue: string,
    requests = 1,
  ): Promise<{ project: Project; hit: RateLimitHit } | null> {
    const rows = await em.execute<Array<Record<string, any>>>(
      `with p as (select * from projects where ${keyColumn} = ?),
       cur as (
         insert into rate_limit_windows (project_id, window_start, count)
         select p.id, date_trunc('minute', now()), ? from p
         on conflict (project_id, window_start) do update set count = rate_limit_windows.count + excluded.count
         returning count, window_start
       )
       select p.*, cur.count as rl_current,
              coalesce((select w.count from rate_limit_windows w
                        where w.project_id = p.id and w.window_start = cur.window_start - interval '1 minute'), 0) as rl_previous,
              (extract(epoch from (now() - cur.window_start)) * 1000)::int as rl_elapsed_ms
       from p, cur`,
      [keyValue, requests],
    );
    if (!rows.length) return null;
    const { rl_current, rl_previous, rl_elapsed_ms, ...projectRow } = rows[0];
    return { project: em.map(ProjectSchema, projectRow), hit: { current: rl_current, previous: rl_previous, elapsedMs: rl_elapsed_ms } };
  },
};
