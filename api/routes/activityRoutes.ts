import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { badRequest } from '../../lib/errors';
import { parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { rangeOnlyQuery, resolveRange } from '../schemas/analyticsSchemas';
import { ACTIVITY_TYPES, activityRepository } from '../../db/analytics/activityRepository';
import { analyticsRepository } from '../../db/analytics/analyticsRepository';
import { percent } from '../../db/analytics/emailMetrics';
import { feedQuery, feedCursor, upcomingQuery } from '../schemas/activitySchemas';

const DAY_MS = 24 * 60 * 60 * 1000;
const FIRST_PAGE_DAYS = 30;
const UPCOMING_DAYS = 30;

/** GET /activity/* (secret key), contract section 15: one feed over events, emails, campaigns and executions. */
export function activityRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);

  router.get('/activity', ...auth, async (ctx) => {
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
    };
  });

  router.get('/activity/stats', ...auth, async (ctx) => {
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
    };
  });

  router.get('/activity/recent-count', ...auth, async (ctx) => {
    ctx.body = { count: await activityRepository.recentCount(ctx.state.em, ctx.state.project!.id) };
  });

  router.get('/activity/types', ...auth, async (ctx) => {
    ctx.body = { types: ACTIVITY_TYPES };
  });

  router.get('/activity/upcoming', ...auth, async (ctx) => {
    const q = parseQuery(upcomingQuery, ctx.query);
    ctx.body = { data: await activityRepository.upcoming(ctx.state.em, ctx.state.project!.id, UPCOMING_DAYS, q.limit) };
  });

  return router;
}
