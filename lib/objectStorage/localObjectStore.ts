import fsp from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';
import { assertSafeKey, type ObjectStore, type StoredObject } from './objectStore';

/**
 * Objects as files under one directory (DATA_DIR/uploads). A put writes a temporary file beside
 * its target and renames it into place, so a crash or a concurrent reader never meets a partial
 * file (rename is atomic within one file system).
 */
export class LocalObjectStore implements ObjectStore {
  readonly kind = 'local';

  constructor(readonly root: string) {}

  private pathOf(key: string): string {
    assertSafeKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const target = this.pathOf(key);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${crypto.randomBytes(6).toString('hex')}.tmp`);
    try {
      const handle = await fsp.open(temporary, 'wx', 0o644);
      try {
        await handle.writeFile(bytes);
        // On disk before the rename makes it visible: a power cut leaves the old state or the whole file.
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fsp.rename(temporary, target);
    } catch (err) {
      await fsp.rm(temporary, { force: true });
      throw err;
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    const file = this.pathOf(key);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      const { size } = await handle.stat();
      // The stream owns the handle from here and closes it when it ends or is destroyed.
      return { body: handle.createReadStream(), size };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async delete(keys: string[]): Promise<void> {
    for (const key of keys) await fsp.rm(this.pathOf(key), { force: true });
  }

  close(): void {
    // Nothing held open between calls.
  }
}
