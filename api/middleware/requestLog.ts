import type { Middleware } from 'koa';
import type { Logger } from '../../lib/logger';
import type { AppState } from '../state';
import type { RequestLogWriter } from '../../services/requestLog/requestLogWriter';

/** Reading the request log is not logged in it: a dashboard refreshing it would fill it with its own reads. */
const NOT_LOGGED_ROUTES = new Set(['/requests']);

/**
 * One log line per request, written once the response is decided (errors included); and, for a
 * request made for a project (a key, or a session with X-Project-Id), a row of the project's
 * request log (GET /requests), handed to `requestLog`'s buffer: no I/O on the request path.
 */
export function requestLog(logger: Logger, requestLog?: RequestLogWriter): Middleware<AppState> {
  return async (ctx, next) => {
    const arrived = Date.now();
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const durationMs = Math.round((Number(process.hrtime.bigint() - started) / 1e6) * 100) / 100;
      const project = ctx.state.project;
      const line = {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs,
        requestId: ctx.state.requestId,
        projectId: project?.id ?? null,
      };
      if (ctx.status >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
      // The route's template (`/contacts/:id`), as @koa/router records the route it ran.
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const template = typeof route === 'string' ? route : null;
      if (requestLog && project && ctx.state.keyKind && !(template && NOT_LOGGED_ROUTES.has(template))) {
        requestLog.record({
          projectId: project.id,
          at: new Date(arrived),
          method: ctx.method,
          path: ctx.path,
          route: template,
          status: ctx.status,
          durationMs,
          auth: ctx.state.keyKind,
          requestId: ctx.state.requestId,
        });
      }
    }
  };
}
