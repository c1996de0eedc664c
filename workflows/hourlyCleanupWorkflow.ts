import { proxyActivities } from '@temporalio/workflow';
import type { CleanupActivities } from '../activities/cleanupActivities';

const { deleteExpiredIdempotencyKeys, deleteStaleRateLimitWindows } = proxyActivities<CleanupActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5 },
});

/** Started every hour by the `<taskQueue>-hourly-cleanup` schedule. */
export async function hourlyCleanupWorkflow(): Promise<{ idempotencyKeysDeleted: number; rateLimitWindowsDeleted: number }> {
  const idempotencyKeysDeleted = await deleteExpiredIdempotencyKeys();
  const rateLimitWindowsDeleted = await deleteStaleRateLimitWindows();
  return { idempotencyKeysDeleted, rateLimitWindowsDeleted };
}
