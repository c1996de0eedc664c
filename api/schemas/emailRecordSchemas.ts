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

/** GET /emails/:id: the record, its own events oldest first, and a received email's content. */
export const emailDetailResponse = z
  .object({
    ...emailShape,
    text: z.string().nullable().optional().describe('A received email’s text part; null once retention removed the message'),
    html: z.string().nullable().optional().describe('A received email’s HTML, sanitised'),
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
