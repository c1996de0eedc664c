import { z } from 'zod';
import { pageLimit } from './paging';
import { emailAddress } from './commonFields';
import { contactData, eventName, subscribedFlag } from './contactSchemas';

export const eventListQuery = z.object({
  limit: pageLimit,
  cursor: z.string().max(1000).optional(),
  name: z.string().max(200).optional(),
  contactId: z.string().max(100).optional(),
});

export const trackBody = z.object({
  email: emailAddress,
  event: eventName,
  data: contactData.optional(),
  subscribed: subscribedFlag,
  preserveExistingSubscription: z.boolean().optional(),
});

/** The cursor of the event lists, ordered by write sequence (a bigint, as decimal text). */
export const eventCursor = z.object({ seq: z.string().regex(/^[1-9][0-9]{0,17}$/) });
