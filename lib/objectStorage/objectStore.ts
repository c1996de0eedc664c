import type { Readable } from 'node:stream';

/** A stored object as read back: its bytes as a stream and their count. */
export interface StoredObject {
  body: Readable;
  size: number;
}

/**
 * Where uploaded files live: a directory (local) or an S3-compatible bucket (s3). Keys are
 * relative paths of [A-Za-z0-9._-] segments made by Mailroom, never by a client.
 */
export interface ObjectStore {
  readonly kind: 'local' | 's3';
  /** Writes the whole object or nothing: a reader never sees a half-written file. */
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** null when there is no such object. */
  get(key: string): Promise<StoredObject | null>;
  /** Removes the objects; keys that are already gone are not an error. */
  delete(keys: string[]): Promise<void>;
  /**
   * Removes the temporary files of writes that never finished (a process killed mid-put) once
   * older than `olderThanMs`; answers how many went. Nothing to do for a store without them.
   */
  removeAbandonedTemporaries(olderThanMs: number): Promise<number>;
  /** Releases connections (the S3 client's sockets); the store is not used afterwards. */
  close(): void;
}

/** The store could not be reached or refused the operation (not: the object is missing). */
export class ObjectStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ObjectStoreError';
  }
}

const KEY = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/** Refuses a key that could leave the store's directory or prefix ('..', absolute, empty segments). */
export function assertSafeKey(key: string): void {
  if (!KEY.test(key) || key.split('/').some((segment) => segment === '..' || segment === '.')) {
    throw new Error(`Unsafe object key: ${JSON.stringify(key)}`);
  }
}
