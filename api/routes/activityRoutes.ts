import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { badRequest } from '../../lib/errors';
import { parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { rangeOnlyQuery, resolveRange } from '../schemas/analyticsSchemas';
import { ACTIVITY_TYPES, activityRepository } from '../../db/analytics/activityRepository';
import { analyticsRepository } from '../../db/analytics/analyticsRepository';
import { percent } from '../../db/analytics/emailMetrics';
import {
  activityFeedResponse,
  activityStatsResponse,
  activityTypesResponse,
  feedQuery,
  feedCursor,
  recentCountResponse,
  upcomingQuery,
  upcomingResponse,
} from '../schemas/activitySchemas';
import { describedRoutes } from '../openapi/describedRouter';

const DAY_MS = 24 * 60 * 60 * 1000;
const FIRST_PAGE_DAYS = 30;
const UPCOMING_DAYS = 30;

/** GET /activity/* (secret key), contract section 15: one feed over events, emails, campaigns and executions. */
export function activityRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Activity', access: 'secret' });
  const auth = keyAuthenticated('secret', deps);

  route.get(
    '/activity',
    {
      summary: 'List recent activity',
      description:
        'One feed, newest first, over recorded events, emails, subscriptions, campaigns and workflow executions (GET /activity/types lists the types; `types` takes several, comma-separated). ' +
        `Without \`start\`, the last ${FIRST_PAGE_DAYS} days; later pages keep the first page's window. \`limit\` is at most 100.`,
      query: feedQuery,
      responses: { 200: { description: 'A page of the feed', schema: activityFeedResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(feedQuery, ctx.query);
      const cursor = q.cursor ? decodeCursor(q.cursor, feedCursor) : undefined;
      const start = q.start ?? (cursor ? new Date(cursor.s) : new Date(Date.now() - FIRST_PAGE_DAYS * DAY_MS));
      if (q.end && q.end.getTime() <= start.getTime()) throw badRequest('`end` must be after `start`');
      const page = await activityRepository.page(ctx.state.em, ctx.state.project!.id, {
        types: q.types ?? new Set(ACTIVITY_TYPES),
        contactId: q.contactId,
        start,
        end: q.end,
        limit: q.limit,
        after: cursor ? { t: cursor.t, id: cursor.id, type: cursor.type } : undefined,
      });
      ctx.body = {
        data: page.items,
        cursor: page.hasMore && page.last ? encodeCursor({ ...page.last, s: start.toISOString() }) : null,
        hasMore: page.hasMore,
      } satisfies z.input<typeof activityFeedResponse>;
    },
  );

  route.get(
    '/activity/stats',
    {
      summary: 'Summarise activity',
      description: 'Totals of a range (by default the last 30 days, at most 366), from the analytics rollups.',
      query: rangeOnlyQuery,
      responses: { 200: { description: 'The totals and rates of the range', schema: activityStatsResponse } },
    },
    ...auth,
    async (ctx) => {
      const range = resolveRange(parseQuery(rangeOnlyQuery, ctx.query));
      const projectId = ctx.state.project!.id;
      const em = ctx.state.em;
      const [emails, totalEvents, totalWorkflowsStarted] = await Promise.all([
        analyticsRepository.emailTotals(em.fork(), projectId, range),
        analyticsRepository.customEventCount(em.fork(), projectId, range),
        analyticsRepository.workflowsStarted(em.fork(), projectId, range),
      ]);
      ctx.body = {
        start: range.start,
        end: range.end,
        totalEvents,
        totalEmailsSent: emails.sent,
        totalEmailsOpened: emails.opened,
        totalEmailsClicked: emails.clicked,
        totalWorkflowsStarted,
        openRate: percent(emails.opened, emails.sent),
        clickRate: percent(emails.clicked, emails.sent),
      } satisfies z.input<typeof activityStatsResponse>;
    },
  );

  route.get(
    '/activity/recent-count',
    {
      summary: 'Count the last five minutes’ activity',
      responses: { 200: { description: 'Feed items of the last five minutes', schema: recentCountResponse } },
    },
    ...auth,
    async (ctx) => {
      ctx.body = { count: await activityRepository.recentCount(ctx.state.em, ctx.state.project!.id) } satisfies z.input<typeof recentCountResponse>;
    },
  );

  route.get(
    '/activity/types',
    { summary: 'List the activity types', responses: { 200: { description: 'Every type the feed has', schema: activityTypesResponse } } },
    ...auth,
    async (ctx) => {
      ctx.body = { types: [...ACTIVITY_TYPES] } satisfies z.input<typeof activityTypesResponse>;
    },
  );

  route.get(
    '/activity/upcoming',
    {
      summary: 'List upcoming sends',
      description: `Soonest first, the next ${UPCOMING_DAYS} days: scheduled campaigns, and waiting workflow executions whose wait (a DELAY, a WAIT_FOR_EVENT's timeout) leads straight to a SEND_EMAIL step. \`limit\` is at most 100.`,
      query: upcomingQuery,
      responses: { 200: { description: 'What is due to send', schema: upcomingResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(upcomingQuery, ctx.query);
      ctx.body = { data: await activityRepository.upcoming(ctx.state.em, ctx.state.project!.id, UPCOMING_DAYS, q.limit) } satisfies z.input<
        typeof upcomingResponse
      >;
    },
  );

  return router;
}
