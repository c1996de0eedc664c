import { z, type ZodTypeAny } from 'zod';
import { badRequest } from '../../lib/errors';

/** Opaque keyset cursors: base64url JSON of the sort key and id of the last row served. */
export function encodeCursor(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

const noNul = (s: string) => !s.includes('\u0000');

/** The cursor of lists ordered by (createdAt, id): the outbox. */
export const timeCursor = z.object({ t: z.string().datetime({ offset: true }), id: z.string().uuid() });

/** The cursor of the event lists, ordered by write sequence (a bigint, as decimal text). */
export const eventCursor = z.object({ seq: z.string().regex(/^[1-9][0-9]{0,17}$/) });

/** The cursor of GET /contacts, which remembers the sort it was made for. */
export const contactCursor = z
  .object({
    s: z.enum(['email', 'createdAt']),
    d: z.enum(['asc', 'desc']),
    v: z.string().max(320).refine(noNul),
    id: z.string().uuid(),
  })
  .refine((c) => c.s !== 'createdAt' || !Number.isNaN(Date.parse(c.v)));

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
