import { z } from 'zod';

export const outboxListQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .catch(20)
    .transform((n) => Math.min(Math.max(n, 1), 100))
    .default(20),
  cursor: z.string().max(500).optional(),
});

/** The cursor of lists ordered by (createdAt, id): the outbox. */
export const timeCursor = z.object({ t: z.string().datetime({ offset: true }), id: z.string().uuid() });
