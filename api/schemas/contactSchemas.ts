import { z } from 'zod';
import { pageLimit } from './paging';
import { contactData } from '../../services/contacts/contactDataRules';
import { emailAddress } from './commonFields';
import { isReservedEventName } from '../../db/events/systemEventNames';

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
  sort: z.enum(['email', 'createdAt']).catch('createdAt').default('createdAt'),
  dir: z.enum(['asc', 'desc']).catch('desc').default('desc'),
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

export const fieldValuesQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).catch(100).default(100) });

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
