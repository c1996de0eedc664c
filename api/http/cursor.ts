import { badRequest } from './errors';

/** Opaque keyset cursors: base64url JSON of the sort key of the last row served. */
export function encodeCursor(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<T = { t: string; id: string }>(cursor: string): T {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (value && typeof value === 'object') return value as T;
  } catch {
    // fall through
  }
  throw badRequest('Invalid cursor: pass the cursor returned by the previous page');
}
