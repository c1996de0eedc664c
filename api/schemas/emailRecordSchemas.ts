import { z } from 'zod';
import { uuidPattern } from '../http/validation';
import { limitParam } from './analyticsSchemas';
import { enumOf } from '../../lib/zodFields';
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
