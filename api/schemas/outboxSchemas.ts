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

const outboxMessageShape = {
  id,
  messageId: z.string(),
  from: z.string(),
  to: z.array(z.string()),
  subject: z.string(),
  size: z.number().int().describe('Bytes of the raw message'),
  createdAt: timestamp,
};

/** A message the local outbox captured (its bytes: GET /outbox/{id}/raw). */
export const outboxMessageResponse = z.object(outboxMessageShape).strict().openapi('OutboxMessage');

export const outboxListResponse = cursorPage(outboxMessageResponse).strict();

/** GET /outbox/:id: a captured message and its parts, read with the same MIME parser as received mail. */
export const outboxMessageDetailResponse = z
  .object({
    ...outboxMessageShape,
    text: z.string().nullable().describe('The text part; null when there is none'),
    html: z
      .string()
      .nullable()
      .describe('The HTML part as it would have been sent, tracking included (GET /outbox/{id}/preview has it without); null when there is none'),
    headers: z.array(z.object({ name: z.string(), value: z.string() }).strict()).describe('The header fields, in order'),
    attachments: z
      .array(z.object({ index: z.number().int(), filename: z.string().nullable(), contentType: z.string(), size: z.number().int() }).strict())
      .describe('The attachments (GET /outbox/{id}/attachments/{index})'),
  })
  .strict()
  .openapi('OutboxMessageDetail');
