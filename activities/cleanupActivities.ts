import type { ActivityDeps } from './deps';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../db/repositories/loginThrottleRepository';
import { clientAddressBudget } from '../db/repositories/clientAddressBudget';

export function createCleanupActivities({ orm }: ActivityDeps) {
  return {
    async deleteExpiredIdempotencyKeys(): Promise<number> {
      const rows = await orm.em.fork().execute(`with gone as (delete from idempotency_keys where expires_at < now() returning 1) select count(*)::int as n from gone`);
      return rows[0].n;
    },
    /** The limiter reads the current and previous minute only; older windows are dead weight. So are the login throttle's and the client-address budgets' passed windows. */
    async deleteStaleRateLimitWindows(): Promise<number> {
      const rows = await orm.em
        .fork()
        .execute(`with gone as (delete from rate_limit_windows where window_start < now() - interval '5 minutes' returning 1) select count(*)::int as n from gone`);
      const loginCounters = await loginThrottleRepository.deleteExpired(orm.em.fork(), LOGIN_THROTTLE.windowMinutes);
      const addressCounters = await clientAddressBudget.deleteExpired(orm.em.fork());
      return rows[0].n + loginCounters + addressCounters;
    },
  };
}
export type CleanupActivities = ReturnType<typeof createCleanupActivities>;
