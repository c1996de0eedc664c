import type { ActivityDeps } from './deps';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../db/repositories/loginThrottleRepository';
import { clientAddressBudget } from '../db/repositories/clientAddressBudget';
import { applyRetention, type RetentionResult } from '../services/retention/retentionPass';
import { RETENTION_KINDS } from '../services/retention/retentionRules';

export function createCleanupActivities({ orm, config, logger }: ActivityDeps) {
  const retention = { orm, settings: config.retention, logger };
  return {
    /** Called by runs recorded before the retention rules (which include idempotency keys) existed. */
    async deleteExpiredIdempotencyKeys(): Promise<number> {
      return (await applyRetention(retention, 'idempotencyKeys')).removed;
    },
    /** The kinds of data the retention removes (services/retention/retentionRules.ts), asked at run time so a new kind needs no workflow change. */
    async retentionKinds(): Promise<string[]> {
      return [...RETENTION_KINDS];
    },
    /** One kind's retention: what it removed, and whether it got through (else the next run goes on). */
    async applyRetention(kind: string): Promise<RetentionResult> {
      return applyRetention(retention, kind);
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
        .execute(
          `with gone as (delete from rate_limit_seconds where second < extract(epoch from now()) - 120 returning 1) select count(*)::int as n from gone`,
        );
      const loginCounters = await loginThrottleRepository.deleteExpired(orm.em.fork(), LOGIN_THROTTLE.windowMinutes);
      const addressCounters = await clientAddressBudget.deleteExpired(orm.em.fork());
      return rows[0].n + loginCounters + addressCounters;
    },
    /**
     * Attachment contents are kept until their emails are done with them: a set goes once no
     * email still to be delivered points at it, and at once when no email was ever recorded for it
     * (its request failed after storing it). The email records keep their content otherwise.
     */
    async deleteSpentAttachments(): Promise<number> {
      const rows = await orm.em.fork().execute(
        `with gone as (
           delete from email_attachment_sets s
           where s.created_at < now() - interval '1 hour'
             and not exists (select 1 from emails e where e.attachment_set_id = s.id and e.status in ('QUEUED', 'SENDING'))
           returning 1)
         select count(*)::int as n from gone`,
      );
      return rows[0].n;
    },
  };
}
export type CleanupActivities = ReturnType<typeof createCleanupActivities>;
