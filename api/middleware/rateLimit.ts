import type { Middleware } from 'koa';
import type { AppState } from '../state';
import { ApiError } from '../http/errors';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';

const WINDOW_MS = 60_000;

/**
 * `limit` requests per project per rolling minute (contract section 4), over the counters in
 * PostgreSQL so that every API process enforces one shared budget. The rolling minute is the
 * sliding-window estimate: this minute's count plus the previous minute's, weighted by how much
 * of it still falls inside the last 60 seconds.
 */
export function rateLimit(limit: number): Middleware<AppState> {
  return async (ctx, next) => {
    const project = ctx.state.project;
    if (limit <= 0 || !project) return next();
    const hit = ctx.state.rateLimitHit ?? (await rateLimitRepository.hit(ctx.state.em, project.id));
    const used = Math.ceil(hit.previous * ((WINDOW_MS - hit.elapsedMs) / WINDOW_MS) + hit.current);
    const resetSeconds = Math.max(1, Math.ceil((WINDOW_MS - hit.elapsedMs) / 1000));
    ctx.set('RateLimit-Limit', String(limit));
    ctx.set('RateLimit-Remaining', String(Math.max(0, limit - used)));
    ctx.set('RateLimit-Reset', String(resetSeconds));
    if (used > limit) {
      throw new ApiError(429, 'RATE_LIMIT_EXCEEDED', `Rate limit of ${limit} requests per minute exceeded`, {
        details: { limit, retryAfter: resetSeconds },
        headers: { 'Retry-After': String(resetSeconds) },
        suggestion: `Retry after ${resetSeconds} seconds`,
      });
    }
    await next();
  };
}
