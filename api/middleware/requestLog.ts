import type { Middleware } from 'koa';
import type { Logger } from '../../lib/logger';

/** One log line per request, written once the response is decided (errors included). */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const line = {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(durationMs * 100) / 100,
        requestId: ctx.state.requestId,
        projectId: ctx.state.project?.id ?? null,
      };
      if (ctx.status >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
    }
  };
}
