import type { ObjectStore } from '../../lib/objectStorage/objectStore';
import type { RetentionSettings } from '../../lib/config';
import type { Logger } from '../../lib/logger';

/**
 * At start: removes the temporary files of uploads a crashed process left in the uploads store
 * (a put killed between writing and renaming), once TEMP_FILE_MAX_AGE_HOURS old. Never fails the
 * start: a directory that cannot be read is logged and left for the next start.
 */
export async function removeAbandonedUploadTemporaries(
  store: ObjectStore,
  settings: RetentionSettings,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<number> {
  try {
    const removed = await store.removeAbandonedTemporaries(settings.tempFileMaxAgeHours * 3600_000);
    if (removed > 0) logger.info({ event: 'retention.temporary_files', removed, store: store.kind }, `removed ${removed} abandoned temporary upload files`);
    return removed;
  } catch (err) {
    logger.warn({ err, event: 'retention.temporary_files' }, 'could not look for abandoned temporary upload files');
    return 0;
  }
}
