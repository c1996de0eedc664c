import type { ActivityDeps } from './deps';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../db/repositories/loginThrottleRepository';
import { clientAddressBudget } from '../db/repositories/clientAddressBudget';

export function createCleanupActivities({ orm }: ActivityDeps) {
  return {
    async deleteExpiredIdempotencyKeys(): Promise<number> {
      const rows = await orm.em.fork().execute(`with gone as (delete from idempotency_keys where expires_at < now() returning 1) select count(*)::int as n from gone`);
      return rows[0].n;
    },
    /**
     * A project's rate-limit row counts nothing once its newest second has left the rolling
     * minute; rows idle for two minutes go, and the project's next request creates its row
     * again. The login throttle's and the client-address budgets' passed windows go too. (The
     * activity keeps its name for the recorded workflow histories.)
     */
    async deleteStaleRateLimitWindows(): Promise<number> {
      const rows = await orm.em
        .fork()
        .execute(`with gone as (delete from rate_limit_seconds where second < extract(epoch from now()) - 120 returning 1) select count(*)::int as n from gone`);
      const loginCounters = await loginThrottleRepository.deleteExpired(orm.em.fork(), LOGIN_THROTTLE.windowMinutes);
      const addressCounters = await clientAddressBudget.deleteExpired(orm.em.fork());
      return rows[0].n + loginCounters + addressCounters;
    },
  };
}
export type CleanupActivities = ReturnType<typeof createCleanupActivities>;
