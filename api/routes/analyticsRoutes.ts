import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { resolveRange } from '../schemas/analyticsSchemas';
import { analyticsRepository } from '../../db/analytics/analyticsRepository';
import { emailRates } from '../../db/analytics/emailMetrics';
import { timeseriesQuery, rankingQuery, rangeOnlyQuery } from '../schemas/analyticsSchemas';

/**
 * GET /analytics/* (secret key), contract section 15: every number comes from the rollups the
 * AnalyticsRollups migration keeps (README, "Activity and analytics").
 */
export function analyticsRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);

  router.get('/analytics/timeseries', ...auth, async (ctx) => {
    const q = parseQuery(timeseriesQuery, ctx.query);
    const range = resolveRange(q);
    const points = await analyticsRepository.timeseries(ctx.state.em, ctx.state.project!.id, range, q.granularity, q.source === 'ALL' ? null : q.source);
    ctx.body = { granularity: q.granularity, source: q.source, start: range.start, end: range.end, points };
  });

  router.get('/analytics/top-campaigns', ...auth, async (ctx) => {
    const q = parseQuery(rankingQuery, ctx.query);
    const range = resolveRange(q);
    const campaigns = await analyticsRepository.topCampaigns(ctx.state.em, ctx.state.project!.id, range, q.limit);
    ctx.body = {
      start: range.start,
      end: range.end,
      data: campaigns.map(({ metrics, ...c }) => ({ ...c, ...metrics, ...emailRates(metrics) })),
    };
  });

  router.get('/analytics/campaign-stats', ...auth, async (ctx) => {
    const range = resolveRange(parseQuery(rangeOnlyQuery, ctx.query));
    const { campaigns, metrics } = await analyticsRepository.campaignTotals(ctx.state.em, ctx.state.project!.id, range);
    ctx.body = { start: range.start, end: range.end, campaigns, ...metrics, ...emailRates(metrics) };
  });

  router.get('/analytics/top-events', ...auth, async (ctx) => {
    const q = parseQuery(rankingQuery, ctx.query);
    const range = resolveRange(q);
    ctx.body = { start: range.start, end: range.end, data: await analyticsRepository.topEvents(ctx.state.em, ctx.state.project!.id, range, q.limit) };
  });

  return router;
}
