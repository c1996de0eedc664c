import { z } from './zod';
import { uuidPattern } from '../http/validation';
import { instant, limitParam } from './analyticsSchemas';
import { cursorPage, freeFormObject, id, timestamp } from './responseFields';
import { ACTIVITY_TYPES, type ActivityType } from '../../db/analytics/activityRepository';

export const typeList = z
  .string()
  .max(1000)
  .transform((s) =>
    s
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  )
  .superRefine((types, ctx) => {
    const unknown = types.filter((t) => !(ACTIVITY_TYPES as readonly string[]).includes(t));
    if (unknown.length) ctx.addIssue({ code: 'custom', message: `Unknown activity type: ${unknown.slice(0, 5).join(', ')}. GET /activity/types lists them` });
    if (!types.length) ctx.addIssue({ code: 'custom', message: 'Name at least one activity type' });
  })
  .transform((types) => new Set(types as ActivityType[]));

export const feedQuery = z.object({
  types: typeList.optional(),
  contactId: z.string().regex(uuidPattern, 'Must be a contact id (UUID)').optional(),
  start: instant.optional(),
  end: instant.optional(),
  limit: limitParam(50, 100),
  cursor: z.string().max(1000).optional(),
});

/** The cursor remembers where the page ended and the window's start, so later pages keep it. */
export const feedCursor = z.object({
  t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
  id: z.string().regex(uuidPattern),
  type: z.enum(ACTIVITY_TYPES),
  s: z.string().datetime(),
});

export const upcomingQuery = z.object({ limit: limitParam(50, 100) });

// ---------------------------------------------------------------------------------------------
// Responses

/** One item of the feed; `metadata` depends on the type (the email, campaign or execution it names, an event's data). */
export const activityItem = z
  .object({
    id: id.describe('The record the item is of: the event, email, campaign or execution'),
    type: z.enum(ACTIVITY_TYPES),
    timestamp,
    contactId: id.optional(),
    contactEmail: z.string().optional(),
    metadata: freeFormObject,
  })
  .strict()
  .openapi('ActivityItem');

export const activityFeedResponse = cursorPage(activityItem).strict();

export const activityStatsResponse = z
  .object({
    start: timestamp,
    end: timestamp,
    totalEvents: z.number().int().describe('Custom events (event.triggered)'),
    totalEmailsSent: z.number().int(),
    totalEmailsOpened: z.number().int(),
    totalEmailsClicked: z.number().int(),
    totalWorkflowsStarted: z.number().int(),
    openRate: z.number().describe('Percent of sent, two decimals'),
    clickRate: z.number().describe('Percent of sent, two decimals'),
  })
  .strict();

export const recentCountResponse = z.object({ count: z.number().int().describe('Feed items of the last five minutes') }).strict();

export const activityTypesResponse = z.object({ types: z.array(z.enum(ACTIVITY_TYPES)) }).strict();

/** What is due to send in the next 30 days: a scheduled campaign, or a waiting execution whose next step is SEND_EMAIL. */
export const upcomingItem = z
  .discriminatedUnion('type', [
    z
      .object({
        type: z.literal('campaign'),
        id,
        scheduledFor: timestamp,
        campaignId: id,
        campaignName: z.string(),
        subject: z.string(),
      })
      .strict(),
    z
      .object({
        type: z.literal('workflow'),
        id,
        scheduledFor: timestamp.describe('When the wait before the SEND_EMAIL step ends'),
        executionId: id,
        workflowId: id,
        workflowName: z.string(),
        stepName: z.string(),
        templateId: id.optional(),
        contactId: id.optional(),
        contactEmail: z.string().optional(),
      })
      .strict(),
  ])
  .openapi('UpcomingSend');

export const upcomingResponse = z.object({ data: z.array(upcomingItem) }).strict();
