import { z } from './zod';
import { pageLimit } from './paging';
import { emailAddress } from './commonFields';
import { contactData, eventName, subscribedFlag } from './contactSchemas';
import { cursorPage, freeFormObject, id, timestamp } from './responseFields';

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

// Responses.

/** What POST /v1/track and POST /events/track answer: the contact's id and the recorded event's. */
export const trackResponse = z
  .object({
    success: z.literal(true),
    data: z.object({ contact: id, event: id, timestamp: timestamp }).strict(),
  })
  .strict()
  .openapi('TrackResult');

/** An event (contract 6): `emailId` only on events about an email. */
export const eventResponse = z
  .object({
    id,
    name: z.string(),
    contactId: id.nullable(),
    data: freeFormObject.nullable(),
    source: z.enum(['API', 'SYSTEM']),
    emailId: id.optional(),
    createdAt: timestamp,
  })
  .strict()
  .openapi('Event');

export const eventListResponse = cursorPage(eventResponse)
  .extend({
    /** On the first page only (no cursor); 0 on later pages. */
    total: z.number().int(),
  })
  .strict();

export const eventStatsResponse = z
  .object({
    total: z.number().int(),
    last24h: z.number().int(),
    last7d: z.number().int(),
    byName: z.array(z.object({ name: z.string(), count: z.number().int() }).strict()),
  })
  .strict();

export const eventNamesResponse = z.object({ names: z.array(z.string()) }).strict();

const namedReference = z.object({ id, name: z.string() }).strict();

export const eventUsageResponse = z
  .object({
    event: z.string(),
    workflows: z.array(
      z
        .object({
          id,
          name: z.string(),
          enabled: z.boolean(),
          /** The event starts this workflow. */
          trigger: z.boolean(),
          /** Its WAIT_FOR_EVENT steps that wait for the event. */
          waitStepIds: z.array(id),
        })
        .strict(),
    ),
    segments: z.array(namedReference),
    campaigns: z.array(namedReference),
  })
  .strict();

export const eventDeleteResponse = z.object({ event: z.string(), deleted: z.number().int() }).strict();
