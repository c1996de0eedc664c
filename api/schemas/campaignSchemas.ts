import { z } from './zod';
import { MESSAGE_CONTENT_LIMITS, messageContentFields, offsetListQuery, offsetPage } from './messageContentFields';
import { id, nullableTimestamp, timestamp } from './responseFields';
import { nullableConditionTree } from './segmentSchemas';
import { enumOf, text } from '../../shared/zodFields';
import { AUDIENCE_TYPES, CAMPAIGN_SORTS, CAMPAIGN_STATUSES, CAMPAIGN_TYPES } from '../../db/campaigns/campaignRepository';
import { conditionTreeSchema } from '../../db/conditions';

/** Limits of campaign fields: the same as templates'. */
export const CAMPAIGN_LIMITS = MESSAGE_CONTENT_LIMITS;

const fields = {
  ...messageContentFields(CAMPAIGN_TYPES),
  audienceType: enumOf('audienceType', AUDIENCE_TYPES),
  segmentId: z
    .string({ invalid_type_error: 'segmentId must be a string' })
    .uuid('segmentId must be a UUID')
    .transform((s) => s.toLowerCase())
    .nullable()
    .optional(),
  audienceCondition: conditionTreeSchema.nullable().optional(),
};

/** POST /campaigns. Which audience fields are required is checked against the audience type afterwards. */
export const createCampaignBody = z.object({ ...fields, type: fields.type.default('MARKETING') });

/** PUT /campaigns/:id: every field optional; what is given replaces the stored value. */
export const updateCampaignBody = z.object({
  name: fields.name.optional(),
  description: fields.description,
  subject: fields.subject.optional(),
  body: fields.body.optional(),
  from: fields.from.optional(),
  fromName: fields.fromName,
  replyTo: fields.replyTo,
  type: fields.type.optional(),
  audienceType: fields.audienceType.optional(),
  segmentId: fields.segmentId,
  audienceCondition: fields.audienceCondition,
});

/**
 * POST /campaigns/audience/count: an audience as a campaign names it (the same fields and rules),
 * and the campaign's type, which says whether only subscribed contacts count.
 */
export const campaignAudienceCountBody = z.object({
  type: fields.type.default('MARKETING'),
  audienceType: fields.audienceType,
  segmentId: fields.segmentId,
  audienceCondition: fields.audienceCondition,
});

export const campaignListQuery = z.object({
  ...offsetListQuery(CAMPAIGN_SORTS),
  // Unlike sort and dir, an unrecognised status is refused (specification).
  status: enumOf('status', CAMPAIGN_STATUSES).optional(),
});

/** The latest date a send may be scheduled for: PostgreSQL and ISO 8601 both end at year 9999 in practice. */
const LATEST_SCHEDULE = Date.UTC(10000, 0, 1);

/**
 * POST /campaigns/:id/send: `scheduledFor` is anything a date parser accepts (an ISO string,
 * another string Date.parse understands, or epoch milliseconds); omitted or null sends now.
 */
export const sendCampaignBody = z.object({
  scheduledFor: z
    .union([z.string().max(100, 'scheduledFor is too long to be a date'), z.number()], {
      errorMap: () => ({ message: 'scheduledFor must be a date string (ISO 8601) or null' }),
    })
    .transform((value, ctx) => {
      const time = typeof value === 'number' ? value : Date.parse(value);
      if (!Number.isFinite(time) || Number.isNaN(new Date(time).getTime())) {
        ctx.addIssue({ code: z.ZodIssueCode.invalid_date, message: `scheduledFor is not a date: ${String(value).slice(0, 100)}` });
        return z.NEVER;
      }
      if (time >= LATEST_SCHEDULE) {
        ctx.addIssue({
          code: z.ZodIssueCode.too_big,
          maximum: LATEST_SCHEDULE,
          inclusive: false,
          type: 'date',
          message: 'scheduledFor must be before the year 10000',
        });
        return z.NEVER;
      }
      return new Date(time);
    })
    .nullable()
    .optional(),
});

export const testCampaignBody = z.object({
  email: text('email')
    .trim()
    .max(254, 'email must be at most 254 characters')
    .email('email must be an email address')
    .transform((s) => s.toLowerCase()),
});

// Responses.

/** Why a campaign stopped before its last recipient. */
const campaignStopReason = z.discriminatedUnion('code', [
  z.object({ code: z.literal('BILLING_LIMIT_EXCEEDED'), category: z.string(), limit: z.number().int().nullable(), message: z.string() }).strict(),
  z.object({ code: z.literal('PROJECT_DISABLED'), disabledReason: z.string().nullable(), message: z.string() }).strict(),
]);

export const campaignResponse = z
  .object({
    id,
    name: z.string(),
    description: z.string().nullable(),
    subject: z.string(),
    body: z.string(),
    from: z.string(),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    type: z.enum(CAMPAIGN_TYPES),
    status: z.enum(CAMPAIGN_STATUSES),
    audienceType: z.enum(AUDIENCE_TYPES),
    /** The audience of a SEGMENT campaign; null once that segment is deleted. */
    segmentId: id.nullable(),
    /** The audience of a FILTERED campaign. */
    audienceCondition: nullableConditionTree,
    scheduledFor: nullableTimestamp,
    totalRecipients: z.number().int(),
    sentCount: z.number().int(),
    deliveredCount: z.number().int(),
    openedCount: z.number().int(),
    clickedCount: z.number().int(),
    bouncedCount: z.number().int(),
    projectId: id,
    sentAt: nullableTimestamp,
    cancelledAt: nullableTimestamp,
    stopReason: campaignStopReason.nullable().describe('Why the send stopped before its last recipient (a monthly cap, a disabled project), or null'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .strict()
  .openapi('Campaign');

export const campaignListResponse = offsetPage(campaignResponse);

/** POST /campaigns: the envelope around the new campaign. */
export const campaignCreatedResponse = z.object({ success: z.literal(true), data: campaignResponse }).strict();

export const campaignSendResponse = z
  .object({
    success: z.literal(true),
    data: z.object({ id, name: z.string(), status: z.enum(CAMPAIGN_STATUSES), scheduledFor: nullableTimestamp }).strict(),
    message: z.string(),
  })
  .strict();

export const campaignCancelResponse = z
  .object({
    success: z.literal(true),
    data: z.object({ id, name: z.string(), status: z.enum(CAMPAIGN_STATUSES), cancelledAt: timestamp }).strict(),
    message: z.string(),
  })
  .strict();

export const campaignTestResponse = z
  .object({
    success: z.literal(true),
    data: z
      .object({
        email: id.describe('The test email’s id (GET /emails/{id})'),
        to: z.string(),
        subject: z.string().describe('As rendered for this address, `[TEST] ` first'),
      })
      .strict(),
    message: z.string(),
  })
  .strict();

export const campaignStatsResponse = z
  .object({
    success: z.literal(true),
    data: z
      .object({
        totalRecipients: z.number().int(),
        sentCount: z.number().int(),
        deliveredCount: z.number().int(),
        openedCount: z.number().int(),
        clickedCount: z.number().int(),
        bouncedCount: z.number().int(),
        complainedCount: z.number().int(),
        unsubscribedCount: z.number().int(),
        openRate: z.number().describe('Percent of sentCount, two decimals'),
        clickRate: z.number(),
        bounceRate: z.number(),
        deliveryRate: z.number(),
      })
      .strict()
      .openapi('CampaignStats'),
  })
  .strict();

export const campaignAudienceCountResponse = z
  .object({
    success: z.literal(true),
    data: z
      .object({
        recipients: z
          .number()
          .int()
          .describe('The contacts a send would go to now: the audience’s contacts, only the subscribed ones for a MARKETING or HEADLESS campaign'),
      })
      .strict(),
  })
  .strict();
