import { z } from './zod';
import { cursorPage, id, nullableTimestamp, timestamp } from './responseFields';
import { uuidPattern } from '../http/validation';
import { limitParam } from './analyticsSchemas';
import { enumOf } from '../../shared/zodFields';
import { EMAIL_RECORD_SOURCES, EMAIL_RECORD_STATUSES } from '../../db/emails/emailRecordRepository';

/** A page's end to the microsecond, as PostgreSQL keeps created_at (a Date would lose the last three digits). */
export const microsecondInstant = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);

/** GET /emails (contract 20). */
export const emailListQuery = z.object({
  limit: limitParam(20, 100),
  cursor: z.string().max(1000).optional(),
  status: enumOf('status', EMAIL_RECORD_STATUSES).optional(),
  source: enumOf('source', EMAIL_RECORD_SOURCES).optional(),
  contactId: z
    .string()
    .regex(uuidPattern, 'Must be a contact id (UUID)')
    .transform((s) => s.toLowerCase())
    .optional(),
  campaignId: z
    .string()
    .regex(uuidPattern, 'Must be a campaign id (UUID)')
    .transform((s) => s.toLowerCase())
    .optional(),
  // The whole address, letter case ignored; not checked as an address (inbound mail may name any).
  to: z
    .string()
    .trim()
    .min(1, 'Must be an email address')
    .max(320)
    .transform((s) => s.toLowerCase())
    .optional(),
});

export const emailCursor = z.object({ t: microsecondInstant, id: z.string().regex(uuidPattern) });

// Responses.

const emailShape = {
  id,
  projectId: id,
  contactId: id.nullable().describe("Null for mail to an address that is no contact (a campaign's test email)"),
  templateId: id.nullable(),
  campaignId: id.nullable(),
  workflowExecutionId: id.nullable(),
  source: z.enum(EMAIL_RECORD_SOURCES),
  subject: z.string(),
  from: z.string(),
  to: z.string(),
  status: z.enum(EMAIL_RECORD_STATUSES),
  messageId: z.string(),
  error: z.string().nullable(),
  sentAt: nullableTimestamp,
  deliveredAt: nullableTimestamp,
  openedAt: nullableTimestamp,
  clickedAt: nullableTimestamp,
  bouncedAt: nullableTimestamp,
  opens: z.number().int(),
  clicks: z.number().int(),
  createdAt: timestamp,
  auth: z
    .object({ spf: z.string(), dkim: z.string(), dmarc: z.string() })
    .strict()
    .nullable()
    .optional()
    .describe('A received email’s SPF, DKIM and DMARC verdicts (pass, fail, softfail, neutral, none, temperror, permerror); absent on sent mail'),
};

export const emailResponse = z.object(emailShape).strict().openapi('Email');

export const emailListResponse = cursorPage(emailResponse).strict();

/** GET /emails/:id: the record, its own events oldest first, its parts (contract 21) and a received email's content. */
export const emailDetailResponse = z
  .object({
    ...emailShape,
    text: z
      .string()
      .nullable()
      .optional()
      .describe(
        'The text part: a sent email’s as handed over, a received email’s as received; null when there is none, or once retention removed a received message',
      ),
    html: z
      .string()
      .nullable()
      .optional()
      .describe(
        'The HTML part: a sent email’s exactly as handed over, open pixel and click redirects included (GET /emails/{id}/preview has it without them); ' +
          'a received email’s sanitised; null when there is none, or once retention removed a received message',
      ),
    headers: z
      .array(z.object({ name: z.string(), value: z.string() }).strict())
      .optional()
      .describe('A received email’s header fields, in order'),
    attachments: z
      .array(z.object({ index: z.number().int(), filename: z.string().nullable(), contentType: z.string(), size: z.number().int() }).strict())
      .optional()
      .describe('A received email’s attachments (GET /emails/{id}/attachments/{index})'),
    events: z.array(z.object({ name: z.string(), createdAt: timestamp, data: z.unknown() }).strict()),
  })
  .strict()
  .openapi('EmailDetail');

/**
 * GET /emails/:id/preview and /outbox/:id/preview (contract 21, "looking is not opening"): a
 * message's parts made for looking at, with no tracking left to trigger.
 */
export const mailPreviewResponse = z
  .object({
    html: z
      .string()
      .nullable()
      .describe('The HTML without the open pixel and with every tracked link pointing at its target (received mail: sanitised); null when there is none'),
    text: z.string().nullable().describe('The text part (never tracked); null when there is none'),
    remoteImages: z
      .number()
      .int()
      .describe('How many images of `html` a mail client would fetch from another host (an `http` or `https` `src`): the dashboard loads none of them'),
  })
  .strict()
  .openapi('MailPreview');

/** GET /emails/:id/preview.html: a session's project, where a frame cannot send X-Project-Id. */
export const emailPreviewDocumentQuery = z.object({
  projectId: z.string().regex(uuidPattern, 'Must be a project id (UUID)').optional().describe('With a session: the project (instead of `X-Project-Id`)'),
});
