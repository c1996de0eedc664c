import type { ZodTypeAny } from 'zod';
import { z } from './zod';

/**
 * Building blocks of response schemas (the API description, contract 19). A presenter is typed by
 * its response schema (`z.input<typeof schema>`), so a response shape has one home.
 */

/** A moment: ISO 8601 in the JSON. Presenters may hand a Date, which JSON writes in that form. */
export const timestamp = z
  .custom<Date | string>((value) => value instanceof Date || typeof value === 'string', { message: 'Expected a timestamp' })
  .openapi({ type: 'string', format: 'date-time' });

/** A moment that may not have happened yet. (`timestamp.nullable()` would be described as a plain string: the generator keeps the override's type.) */
export const nullableTimestamp = timestamp.nullable().openapi({ type: ['string', 'null'] });

/** A uuid the API made. */
export const id = z.string().openapi({ format: 'uuid' });

/** Free-form JSON a caller gave (contact data, event data): any object. */
export const freeFormObject = z.record(z.unknown());

/** A cursor page (contract 3): `{ data, cursor, hasMore }`, `cursor` null on the last page. */
export function cursorPage<T extends ZodTypeAny>(item: T) {
  return z.object({ data: z.array(item), cursor: z.string().nullable(), hasMore: z.boolean() });
}

/** The body of 202 answers that queue a job: `{ jobId }` and what the route adds. */
export const acceptedJob = z.object({ jobId: z.string() });

/** A file field of a multipart request, as the description shows it. */
export const uploadedFile = z.custom<unknown>(() => true).openapi({ type: 'string', format: 'binary' });
