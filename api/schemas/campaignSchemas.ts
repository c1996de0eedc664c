import { z } from 'zod';
import { MESSAGE_CONTENT_LIMITS, messageContentFields, offsetListQuery } from './messageContentFields';
import { enumOf, text } from '../../lib/zodFields';
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
