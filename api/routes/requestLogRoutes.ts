import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { describedRoutes } from '../openapi/describedRouter';
import { requestLogRepository } from '../../db/requestLog/requestLogRepository';
import { requestLogCursor, requestLogQuery, requestLogResponse } from '../schemas/requestLogSchemas';

/**
 * GET /requests: the project's recent API requests (the request log), secret key or session.
 * Rows are written in batches about a second after the answer (services/requestLog/requestLogWriter.ts)
 * and kept REQUEST_LOG_RETENTION_DAYS.
 */
export function requestLogRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Developers', access: 'secret' });

  route.get(
    '/requests',
    {
      summary: 'List recent API requests',
      description:
        'The project’s API requests (made with its keys, or by a dashboard session with X-Project-Id), newest first, in cursor pages: ' +
        'method, path and route, status, duration, how it was authenticated and its request id. ' +
        'A request appears about a second after its answer; requests are kept REQUEST_LOG_RETENTION_DAYS (7 by default). ' +
        'Requests without a project (health, configuration, account and tracking links) and reads of this list are not logged; ' +
        'while the database is too slow to keep up, rows may be dropped rather than slow the API down.',
      query: requestLogQuery,
      responses: { 200: { description: 'A page of requests', schema: requestLogResponse } },
    },
    ...keyAuthenticated('secret', deps),
    async (ctx) => {
      const q = parseQuery(requestLogQuery, ctx.query);
      const after = q.cursor ? decodeCursor(q.cursor, requestLogCursor) : undefined;
      const page = await requestLogRepository.page(ctx.state.em, ctx.state.project!.id, { statusClass: q.status, path: q.path, auth: q.auth }, q.limit, after);
      ctx.body = {
        data: page.requests.map((r) => ({
          id: r.id,
          method: r.method,
          path: r.path,
          route: r.route,
          status: r.status,
          durationMs: r.durationMs,
          auth: r.auth,
          requestId: r.requestId,
          createdAt: r.at,
        })),
        cursor: page.hasMore && page.last ? encodeCursor({ ...page.last }) : null,
        hasMore: page.hasMore,
      } satisfies z.input<typeof requestLogResponse>;
    },
  );

  return router;
}
