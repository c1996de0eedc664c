import type { ActivityDeps } from './deps';
import { applyRetention, type RetentionResult } from '../services/retention/retentionPass';
import { RETENTION_KINDS } from '../services/retention/retentionRules';
import { deleteSpentAttachments, deleteStaleRateLimitWindows } from '../services/retention/housekeeping';

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
     * Rate-limit rows and login and client-address counters that count nothing any more
     * (services/retention/housekeeping.ts). The activity keeps its name for the recorded
     * workflow histories.
     */
    async deleteStaleRateLimitWindows(): Promise<number> {
      return deleteStaleRateLimitWindows(orm.em.fork());
    },
    /** Attachment contents no email needs any more (services/retention/housekeeping.ts). */
    async deleteSpentAttachments(): Promise<number> {
      return deleteSpentAttachments(orm.em.fork());
    },
  };
}
export type CleanupActivities = ReturnType<typeof createCleanupActivities>;
