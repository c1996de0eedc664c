import { patched, proxyActivities } from '@temporalio/workflow';
import type { CleanupActivities } from '../activities/cleanupActivities';

const { deleteExpiredIdempotencyKeys, deleteStaleRateLimitWindows, deleteSpentAttachments } = proxyActivities<CleanupActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5 },
});

/** Started every hour by the `<taskQueue>-hourly-cleanup` schedule. */
export async function hourlyCleanupWorkflow(): Promise<{ idempotencyKeysDeleted: number; rateLimitWindowsDeleted: number; attachmentSetsDeleted?: number }> {
  const idempotencyKeysDeleted = await deleteExpiredIdempotencyKeys();
  const rateLimitWindowsDeleted = await deleteStaleRateLimitWindows();
  // Runs recorded before attachments existed did not have this step.
  if (!patched('delete-spent-attachments')) return { idempotencyKeysDeleted, rateLimitWindowsDeleted };
  const attachmentSetsDeleted = await deleteSpentAttachments();
  return { idempotencyKeysDeleted, rateLimitWindowsDeleted, attachmentSetsDeleted };
}
