import type { ActivityDeps } from './deps';

export function createCleanupActivities({ orm }: ActivityDeps) {
  return {
    async deleteExpiredIdempotencyKeys(): Promise<number> {
      const rows = await orm.em.fork().execute(`with gone as (delete from idempotency_keys where expires_at < now() returning 1) select count(*)::int as n from gone`);
      return rows[0].n;
    },
    /**
     * A project's rate-limit row counts nothing once its newest second has left the rolling
     * minute; rows idle for two minutes go, and the project's next request creates its row
     * again. (The activity keeps its name for the recorded workflow histories.)
     */
    async deleteStaleRateLimitWindows(): Promise<number> {
      const rows = await orm.em
        .fork()
        .execute(`with gone as (delete from rate_limit_seconds where second < extract(epoch from now()) - 120 returning 1) select count(*)::int as n from gone`);
      return rows[0].n;
    },
  };
}
export type CleanupActivities = ReturnType<typeof createCleanupActivities>;
