import path from 'node:path';
import type { Config } from '../config';
import type { ObjectStore } from './objectStore';
import { LocalObjectStore } from './localObjectStore';
import { S3ObjectStore } from './s3ObjectStore';

/** The uploads store this configuration names: the S3 bucket when one is set, else DATA_DIR/uploads. */
export function createObjectStore(config: Config): ObjectStore {
  return config.s3 ? new S3ObjectStore(config.s3) : new LocalObjectStore(path.join(config.dataDir, 'uploads'));
}
