/**
 * CSV imports run on a task queue of their own, beside the main one, so that a worker can poll it
 * with its own concurrency limit (IMPORT_CONCURRENCY): imports beyond the limit wait in Temporal,
 * where any worker with a free slot takes them, instead of crowding one worker's memory.
 * Pure, so workflow code can use it too.
 */
export function importTaskQueue(taskQueue: string): string {
  return `${taskQueue}-imports`;
}

/**
 * Transactional delivery runs on a task queue of its own with its own worker slots, so mail
 * accepted by /v1/send is never queued behind campaign or import work on the main queue.
 */
export function deliveryTaskQueue(taskQueue: string): string {
  return `${taskQueue}-delivery`;
}

/**
 * Outbound webhook delivery runs on a task queue of its own: each busy endpoint holds one of its
 * activity slots (WEBHOOK_DELIVERY_SLOTS) while it delivers, and a slow receiver must never hold
 * a slot that sends, campaigns or imports need.
 */
export function webhookTaskQueue(taskQueue: string): string {
  return `${taskQueue}-webhooks`;
}
