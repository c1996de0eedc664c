import type { Dirent } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';
import { assertSafeKey, type ObjectStore, type StoredObject } from './objectStore';

const TEMPORARY_SUFFIX = '.tmp';
/** What put() names its temporary files; a key's segment never starts with a dot (assertSafeKey), so no object looks like one. */
const TEMPORARY_NAME = /^\..+\.[0-9a-f]{12}\.tmp$/;

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
    const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${crypto.randomBytes(6).toString('hex')}${TEMPORARY_SUFFIX}`);
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

  /**
   * put() removes its temporary file when it fails, but not when its process dies first (a kill,
   * a power cut): such files are found by name under the root and removed once `olderThanMs` old
   * (a put in progress, in this process or another sharing the directory, writes for seconds).
   */
  async removeAbandonedTemporaries(olderThanMs: number): Promise<number> {
    const cutoff = Date.now() - olderThanMs;
    let removed = 0;
    const visit = async (dir: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const entry of entries) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) await visit(file);
        else if (entry.isFile() && TEMPORARY_NAME.test(entry.name)) {
          const stat = await fsp.stat(file).catch(() => null);
          if (stat && stat.mtimeMs < cutoff) {
            await fsp.rm(file, { force: true });
            removed++;
          }
        }
      }
    };
    await visit(this.root);
    return removed;
  }

  close(): void {
    // Nothing held open between calls.
  }
}
