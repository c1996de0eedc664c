import { withFallback, z } from './zod';
import { cursorPage, id, timestamp } from './responseFields';

export const outboxListQuery = z.object({
  limit: withFallback(z.coerce.number().int(), 20)
    .transform((n) => Math.min(Math.max(n, 1), 100))
    .default(20),
  cursor: z.string().max(500).optional(),
});

/** The cursor of lists ordered by (createdAt, id): the outbox. */
export const timeCursor = z.object({ t: z.string().datetime({ offset: true }), id: z.string().uuid() });

// Responses.

/** A message the local outbox captured (its bytes: GET /outbox/{id}/raw). */
export const outboxMessageResponse = z
  .object({
    id,
    messageId: z.string(),
    from: z.string(),
    to: z.array(z.string()),
    subject: z.string(),
    size: z.number().int().describe('Bytes of the raw message'),
    createdAt: timestamp,
  })
  .strict()
  .openapi('OutboxMessage');

export const outboxListResponse = cursorPage(outboxMessageResponse).strict();
