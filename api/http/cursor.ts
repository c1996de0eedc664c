import { z, type ZodTypeAny } from 'zod';
import { badRequest } from '../../lib/errors';

/** Opaque keyset cursors: base64url JSON of the sort key and id of the last row served. */
export function encodeCursor(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * Decodes a cursor a client sent back. Anything that is not a cursor this API made (garbage,
 * another list's cursor, a hand-edited one) is a 400 before it gets near a query.
 */
export function decodeCursor<S extends ZodTypeAny>(cursor: string, schema: S): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw badRequest('Invalid cursor: pass the cursor returned by the previous page');
  return parsed.data;
}
