import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import {
  campaignStatsResponse,
  MAX_RANGE_DAYS,
  rangeOnlyQuery,
  rankingQuery,
  resolveRange,
  timeseriesQuery,
  timeseriesResponse,
  topCampaignsResponse,
  topEventsResponse,
} from '../schemas/analyticsSchemas';
import { analyticsRepository } from '../../db/analytics/analyticsRepository';
import { emailRates } from '../../db/analytics/emailMetrics';
import { describedRoutes } from '../openapi/describedRouter';

const RANGE = `The range is [start, end), by default the last 30 days, at most ${MAX_RANGE_DAYS} days; the counts cover the whole UTC hours it touches.`;

/**
 * GET /analytics/* (secret key), contract section 15: every number comes from the rollups the
 * AnalyticsRollups migration keeps (docs/features.md, "Activity and analytics").
 */
export function analyticsRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Analytics', access: 'secret' });
  const auth = keyAuthenticated('secret', deps);

  route.get(
    '/analytics/timeseries',
    {
      summary: 'Get email counts over time',
      description: `One point per hour or day (UTC) of the range, zeros included, oldest first; \`source\` narrows to one kind of email. ${RANGE}`,
      query: timeseriesQuery,
      responses: { 200: { description: 'The points of the range', schema: timeseriesResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(timeseriesQuery, ctx.query);
      const range = resolveRange(q);
      const points = await analyticsRepository.timeseries(ctx.state.em, ctx.state.project!.id, range, q.granularity, q.source === 'ALL' ? null : q.source);
      ctx.body = { granularity: q.granularity, source: q.source, start: range.start, end: range.end, points } satisfies z.input<typeof timeseriesResponse>;
    },
  );

  route.get(
    '/analytics/top-campaigns',
    {
      summary: 'List top campaigns',
      description: `Campaigns whose sending started in the range, most sent first, with their counts and rates; \`limit\` at most 100. ${RANGE}`,
      query: rankingQuery,
      responses: { 200: { description: 'The campaigns of the range', schema: topCampaignsResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(rankingQuery, ctx.query);
      const range = resolveRange(q);
      const campaigns = await analyticsRepository.topCampaigns(ctx.state.em, ctx.state.project!.id, range, q.limit);
      ctx.body = {
        start: range.start,
        end: range.end,
        data: campaigns.map(({ metrics, ...c }) => ({ ...c, ...metrics, ...emailRates(metrics) })),
      } satisfies z.input<typeof topCampaignsResponse>;
    },
  );

  route.get(
    '/analytics/campaign-stats',
    {
      summary: 'Get campaign totals',
      description: `The counts and rates of every campaign whose sending started in the range. ${RANGE}`,
      query: rangeOnlyQuery,
      responses: { 200: { description: 'The totals of the range', schema: campaignStatsResponse } },
    },
    ...auth,
    async (ctx) => {
      const range = resolveRange(parseQuery(rangeOnlyQuery, ctx.query));
      const { campaigns, metrics } = await analyticsRepository.campaignTotals(ctx.state.em, ctx.state.project!.id, range);
      ctx.body = { start: range.start, end: range.end, campaigns, ...metrics, ...emailRates(metrics) } satisfies z.input<typeof campaignStatsResponse>;
    },
  );

  route.get(
    '/analytics/top-events',
    {
      summary: 'List top custom events',
      description: `The project's own event names (not email.*, contact.* or segment.*), most recorded first; \`limit\` at most 100. ${RANGE}`,
      query: rankingQuery,
      responses: { 200: { description: 'The events of the range', schema: topEventsResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(rankingQuery, ctx.query);
      const range = resolveRange(q);
      ctx.body = {
        start: range.start,
        end: range.end,
        data: await analyticsRepository.topEvents(ctx.state.em, ctx.state.project!.id, range, q.limit),
      } satisfies z.input<typeof topEventsResponse>;
    },
  );

  return router;
}
