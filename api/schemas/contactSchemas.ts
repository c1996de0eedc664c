import { withFallback, z } from './zod';
import { pageLimit } from './paging';
import { contactData } from '../../services/contacts/contactDataRules';
import { emailAddress } from './commonFields';
import { isReservedEventName } from '../../db/events/systemEventNames';
import { acceptedJob, cursorPage, freeFormObject, id, nullableTimestamp, timestamp, uploadedFile } from './responseFields';

/** `data` as sent on contact writes, track and send: the one schema of the contact data rules. */
export { contactData };

export const eventName = z
  .string({ required_error: 'event is required', invalid_type_error: 'event must be a string' })
  .trim()
  .min(1)
  .max(200)
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), { message: 'Event names must not contain control characters' })
  .superRefine((name, ctx) => {
    if (isReservedEventName(name)) {
      ctx.addIssue({ code: 'custom', message: `"${name}" is a reserved event name emitted by Mailroom itself`, params: { code: 'reserved_event' } });
    }
  });

/** `subscribed` on contact writes, track and send. */
export const subscribedFlag = z.boolean({ invalid_type_error: 'subscribed must be a boolean' }).optional();

export const bulkContactIdsBody = z.object({
  contactIds: z.array(z.string().uuid('Each contact id must be a UUID'), { required_error: 'contactIds is required' }).min(1).max(1000),
});

export const contactListQuery = z.object({
  limit: pageLimit,
  cursor: z.string().max(1000).optional(),
  search: z.string().max(254).optional(),
  subscribed: z.enum(['true', 'false']).optional(),
  // Unrecognised sort and dir values fall back to the defaults (specification).
  sort: withFallback(z.enum(['email', 'createdAt']), 'createdAt').default('createdAt'),
  dir: withFallback(z.enum(['asc', 'desc']), 'desc').default('desc'),
});

export const contactUpsertBody = z.object({
  email: emailAddress,
  subscribed: subscribedFlag,
  data: contactData.optional(),
});

export const contactPatchBody = z.object({
  email: emailAddress.optional(),
  subscribed: subscribedFlag,
  data: contactData.optional(),
});

export const contactLookupBody = z.object({ emails: z.array(emailAddress).min(1).max(500) });

export const fieldValuesQuery = z.object({ limit: withFallback(z.coerce.number().int().min(1).max(1000), 100).default(100) });

const noNul = (s: string) => !s.includes('\u0000');

/** The cursor of GET /contacts, which remembers the sort it was made for. */
export const contactCursor = z
  .object({
    s: z.enum(['email', 'createdAt']),
    d: z.enum(['asc', 'desc']),
    v: z.string().max(320).refine(noNul),
    id: z.string().uuid(),
  })
  .refine((c) => c.s !== 'createdAt' || !Number.isNaN(Date.parse(c.v)));

// Responses.

/** A contact's public shape (services/contacts/contactShape.ts): what the API answers and WEBHOOK steps send. */
const contactShape = {
  id,
  email: z.string(),
  subscribed: z.boolean(),
  data: freeFormObject,
  createdAt: timestamp,
  updatedAt: timestamp,
};

export const contactResponse = z.object(contactShape).strict().openapi('Contact');

/** POST /contacts: the contact and whether this write created it. */
export const contactWriteResponse = z
  .object({ ...contactShape, _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }).strict() })
  .strict()
  .openapi('ContactWrite');

export const contactListResponse = cursorPage(contactResponse)
  .extend({
    /** On the first page only (no cursor); 0 on later pages. */
    total: z.number().int(),
    totalCapped: z.boolean(),
  })
  .strict();

export const contactLookupResponse = z
  .object({
    found: z.array(z.object({ id, email: z.string(), subscribed: z.boolean() }).strict()),
    notFound: z.array(z.string()),
  })
  .strict();

export const contactFieldsResponse = z
  .object({
    fields: z.array(
      z
        .object({
          field: z.string(),
          type: z.enum(['string', 'number', 'boolean', 'date', 'object', 'array']),
          /** Percent of the project's contacts that have the field, one decimal. */
          coverage: z.number(),
        })
        .strict(),
    ),
    count: z.number().int(),
  })
  .strict();

export const fieldValuesResponse = z.object({ field: z.string(), values: z.array(z.unknown()), count: z.number().int(), limit: z.number().int() }).strict();

const namedReference = z.object({ id, name: z.string() }).strict();

export const contactFieldUsageResponse = z
  .object({
    field: z.string(),
    segments: z.array(namedReference),
    campaigns: z.array(namedReference),
    workflows: z.array(namedReference),
    contactCount: z.number().int(),
    canDelete: z.boolean(),
  })
  .strict();

export const contactFieldDeleteResponse = z.object({ field: z.string(), deletedFrom: z.number().int() }).strict();

/** POST /contacts/import: the file as a multipart form field. */
export const contactImportBody = z.object({ file: uploadedFile });

const jobStatus = z.enum(['QUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED']);

/** The 202 of an import or a bulk job. */
export const queuedJobResponse = acceptedJob.extend({ status: jobStatus, total: z.number().int() }).strict();

/** An import or bulk job (contract 5). */
export const jobResponse = z
  .object({
    id,
    type: z.enum(['IMPORT', 'BULK_SUBSCRIBE', 'BULK_UNSUBSCRIBE', 'BULK_DELETE']),
    status: jobStatus,
    /** Percent processed, 0..100. */
    progress: z.number().int(),
    total: z.number().int(),
    processed: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    /** The first 100 errors; the counts keep the rest. */
    errors: z.array(z.object({ row: z.number().int().optional(), email: z.string().optional(), contactId: z.string().optional(), error: z.string() }).strict()),
    /** Why a FAILED job stopped. */
    error: z.string().optional(),
    createdAt: timestamp,
    startedAt: nullableTimestamp,
    completedAt: nullableTimestamp,
  })
  .strict()
  .openapi('Job');
