import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { assertSafeKey, ObjectStoreError, type ObjectStore, type StoredObject } from './objectStore';
import type { S3Settings } from './s3Settings';

/** Deletions in flight at once when many objects go (a project's uploads). */
const DELETE_CONCURRENCY = 8;

/**
 * Objects in an S3-compatible bucket through the AWS SDK v3 client. A PutObject is atomic on
 * the store's side (an object is visible whole or not at all), so no temporary key is needed.
 */
export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3';
  private readonly client: S3Client;

  constructor(private readonly settings: S3Settings) {
    this.client = new S3Client({
      endpoint: settings.endpoint,
      region: settings.region,
      credentials: settings.credentials,
      forcePathStyle: settings.forcePathStyle,
      // Checksums only where the API requires them: many S3-compatible stores do not know the
      // newer CRC headers the SDK would otherwise add to every PutObject.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  private keyOf(key: string): string {
    assertSafeKey(key);
    return this.settings.keyPrefix + key;
  }

  /** PutObject leaves no temporary object behind. */
  async removeAbandonedTemporaries(): Promise<number> {
    return 0;
  }

  async put(key: string, bytes: Buffer, contentType: string): Promise<void> {
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.settings.bucket,
          Key: this.keyOf(key),
          Body: bytes,
          ContentLength: bytes.length,
          ContentType: contentType,
          CacheControl: 'public, max-age=31536000, immutable',
        }),
      );
    } catch (err) {
      throw storeError('store the file', err);
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key: this.keyOf(key) }));
      return { body: res.Body as Readable, size: Number(res.ContentLength ?? 0) };
    } catch (err) {
      if (err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404)) return null;
      throw storeError('read the file', err);
    }
  }

  /**
   * One DeleteObject per key rather than a DeleteObjects batch: the batch call must carry a
   * checksum header that several S3-compatible stores do not accept from current SDKs.
   */
  async delete(keys: string[]): Promise<void> {
    const queue = [...keys];
    const failures: string[] = [];
    const worker = async () => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        try {
          await this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.keyOf(key) }));
        } catch (err) {
          failures.push(`${key}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, queue.length) }, worker));
    if (failures.length) throw new ObjectStoreError(`Could not delete ${failures.length} file(s) from object storage: ${failures.slice(0, 5).join('; ')}`);
  }

  close(): void {
    this.client.destroy();
  }
}

function storeError(what: string, err: unknown): ObjectStoreError {
  const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new ObjectStoreError(`Could not ${what} in object storage (${reason})`, { cause: err });
}
