import type { ActivityDeps } from './deps';

export function createCleanupActivities({ orm }: ActivityDeps) {
  return {
    async deleteExpiredIdempotencyKeys(): Promise<number> {
      const rows = await orm.em.fork().execute(`with gone as (delete from idempotency_keys where expires_at < now() returning 1) select count(*)::int as n from gone`);
      return rows[0].n;
    },
    /** The limiter reads the current and previous minute only; older windows are dead weight. */
    async deleteStaleRateLimitWindows(): Promise<number> {
      const rows = await orm.em
        .fork()
        .execute(`with gone as (delete from rate_limit_windows where window_start < now() - interval '5 minutes' returning 1) select count(*)::int as n from gone`);
      return rows[0].n;
    },
  };
}
export type CleanupActivities = ReturnType<typeof createCleanupActivities>;
