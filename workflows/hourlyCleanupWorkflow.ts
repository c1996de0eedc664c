import { patched, proxyActivities } from '@temporalio/workflow';
import type { CleanupActivities } from '../activities/cleanupActivities';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { deleteExpiredIdempotencyKeys, deleteStaleRateLimitWindows, deleteSpentAttachments, retentionKinds, applyRetention } =
  proxyActivities<CleanupActivities>({
    startToCloseTimeout: '5 minutes',
    retry: PERIODIC_ACTIVITY_RETRY,
  });

export interface HourlyCleanupResult {
  idempotencyKeysDeleted?: number;
  rateLimitWindowsDeleted: number;
  attachmentSetsDeleted?: number;
  /** What each retention kind removed (services/retention/retentionRules.ts). */
  retention?: Record<string, number>;
  /** Kinds that ran out of time with more to remove: the next run goes on. */
  unfinished?: string[];
}

/** Started every hour by the `<taskQueue>-hourly-cleanup` schedule. */
export async function hourlyCleanupWorkflow(): Promise<HourlyCleanupResult> {
  // Runs recorded before the retention rules began with the idempotency keys' own activity.
  if (patched('retention-rules')) return cleanupWithRetention();
  const idempotencyKeysDeleted = await deleteExpiredIdempotencyKeys();
  const rateLimitWindowsDeleted = await deleteStaleRateLimitWindows();
  // Runs recorded before attachments existed did not have this step.
  if (!patched('delete-spent-attachments')) return { idempotencyKeysDeleted, rateLimitWindowsDeleted };
  const attachmentSetsDeleted = await deleteSpentAttachments();
  return { idempotencyKeysDeleted, rateLimitWindowsDeleted, attachmentSetsDeleted };
}

/** The counters and attachments as before, then each retention kind in turn (idempotency keys among them), one activity each. */
async function cleanupWithRetention(): Promise<HourlyCleanupResult> {
  const rateLimitWindowsDeleted = await deleteStaleRateLimitWindows();
  const attachmentSetsDeleted = await deleteSpentAttachments();
  const retention: Record<string, number> = {};
  const unfinished: string[] = [];
  for (const kind of await retentionKinds()) {
    const result = await applyRetention(kind);
    retention[kind] = result.removed;
    if (!result.finished) unfinished.push(kind);
  }
  return { idempotencyKeysDeleted: retention.idempotencyKeys, rateLimitWindowsDeleted, attachmentSetsDeleted, retention, unfinished };
}
