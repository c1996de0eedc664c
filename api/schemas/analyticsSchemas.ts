import { z } from './zod';
import { id, nullableTimestamp, timestamp } from './responseFields';
import { badRequest } from '../../lib/errors';
import type { TimeRange } from '../../db/analytics/analyticsRepository';
import { CAMPAIGN_STATUSES } from '../../db/campaigns/campaignRepository';
import { EMAIL_METRICS, type EmailMetric, type EmailRates } from '../../db/analytics/emailMetrics';

const DAY_MS = 24 * 60 * 60 * 1000;
export const MAX_RANGE_DAYS = 366;
export const DEFAULT_RANGE_DAYS = 30;

const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

/** Date.parse rolls 2026-02-30 over to March; a calendar date must survive the round trip. */
const isCalendarDate = (day: string) => !Number.isNaN(Date.parse(`${day}T00:00:00Z`)) && new Date(`${day}T00:00:00Z`).toISOString().slice(0, 10) === day;

/** A point in time: an ISO 8601 date (midnight UTC) or date-time with its offset. */
export const instant = z
  .string()
  .max(40)
  .refine((s) => (ISO_DATE.test(s) || ISO_DATE_TIME.test(s)) && !Number.isNaN(Date.parse(s)) && isCalendarDate(s.slice(0, 10)), {
    message: 'Must be an ISO 8601 date (2026-10-09) or date-time with offset (2026-10-09T14:00:00Z)',
  })
  .transform((s) => new Date(ISO_DATE.test(s) ? `${s}T00:00:00Z` : s))
  // Years outside 0001–9999 cannot be PostgreSQL timestamps a dashboard means.
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, { message: 'Year out of range' });

export const rangeQuery = { start: instant.optional(), end: instant.optional() };

/** A positive integer query parameter with a default and a ceiling (above it: the ceiling). */
export const limitParam = (fallback: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, 'Must be a positive integer')
    .transform(Number)
    .refine((n) => n >= 1, 'Must be at least 1')
    .transform((n) => Math.min(n, max))
    .optional()
    .transform((n) => n ?? fallback);

/**
 * The range of an analytics query: [start, end), by default the last 30 days up to now. End
 * before start, or more than 366 days, is a 400.
 */
export function resolveRange(q: { start?: Date; end?: Date }, now = new Date()): TimeRange {
  const end = q.end ?? (q.start ? new Date(Math.max(now.getTime(), q.start.getTime())) : now);
  const start = q.start ?? new Date(end.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (end.getTime() <= start.getTime()) throw badRequest('`end` must be after `start`');
  if (end.getTime() - start.getTime() > MAX_RANGE_DAYS * DAY_MS) throw badRequest(`The range may span at most ${MAX_RANGE_DAYS} days`);
  return { start, end };
}

export const timeseriesQuery = z.object({
  ...rangeQuery,
  granularity: z.enum(['hour', 'day']).default('day'),
  source: z.enum(['ALL', 'TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW']).default('ALL'),
});

export const rankingQuery = z.object({ ...rangeQuery, limit: limitParam(10, 100) });

/** Only the time window (analytics totals, activity summary). */
export const rangeOnlyQuery = z.object(rangeQuery);

// ---------------------------------------------------------------------------------------------
// Responses

/** The range a figure covers, [start, end). */
const rangeFields = { start: timestamp, end: timestamp };

/** The email counts of the rollups: sent, delivered, opened, clicked, bounced, complained, unsubscribed. */
export const emailMetricFields = Object.fromEntries(EMAIL_METRICS.map((m) => [m, z.number().int()])) as Record<EmailMetric, z.ZodNumber>;

const RATE_NAMES = [
  'deliveryRate',
  'openRate',
  'clickRate',
  'clickToOpenRate',
  'bounceRate',
  'complaintRate',
  'unsubscribeRate',
] as const satisfies ReadonlyArray<keyof EmailRates>;
/** Percentages with two decimals, of `sent` (click-to-open: of `opened`); 0 when nothing was sent. */
const emailRateFields = Object.fromEntries(RATE_NAMES.map((r) => [r, z.number()])) as Record<keyof EmailRates, z.ZodNumber>;

export const timeseriesResponse = z
  .object({
    granularity: z.enum(['hour', 'day']),
    source: z.enum(['ALL', 'TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW']),
    ...rangeFields,
    points: z.array(
      z.object({ bucket: z.string().openapi({ format: 'date-time', description: 'The hour or day (UTC) the counts are of' }), ...emailMetricFields }).strict(),
    ),
  })
  .strict()
  .openapi('AnalyticsTimeseries');

export const topCampaignsResponse = z
  .object({
    ...rangeFields,
    data: z.array(
      z
        .object({
          id,
          name: z.string(),
          subject: z.string(),
          status: z.enum(CAMPAIGN_STATUSES),
          startedAt: timestamp.describe('When its sending started'),
          sentAt: nullableTimestamp,
          totalRecipients: z.number().int(),
          ...emailMetricFields,
          ...emailRateFields,
        })
        .strict(),
    ),
  })
  .strict();

export const campaignStatsResponse = z
  .object({ ...rangeFields, campaigns: z.number().int().describe('Campaigns whose sending started in the range'), ...emailMetricFields, ...emailRateFields })
  .strict();

export const topEventsResponse = z.object({ ...rangeFields, data: z.array(z.object({ name: z.string(), count: z.number().int() }).strict()) }).strict();
