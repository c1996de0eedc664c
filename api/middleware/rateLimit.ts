import type { Middleware } from 'koa';
import type { AppState } from '../state';
import { ApiError } from '../../lib/errors';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';

/**
 * `limit` requests per project per rolling minute (contract section 4), counted in PostgreSQL so
 * that every API process enforces one shared budget. No 60-second window ever holds more than
 * `limit` accepted requests; refused requests are not counted, so a client over the limit still
 * gets `limit` through per rolling minute. The key middleware usually counted the request already
 * (same statement as the key lookup); a session request is counted here.
 */
export function rateLimit(limit: number): Middleware<AppState> {
  return async (ctx, next) => {
    const project = ctx.state.project;
    if (limit <= 0 || !project) return next();
    const hit = ctx.state.rateLimitHit ?? (await rateLimitRepository.hit(ctx.state.em, project.id, { limit }))[0];
    ctx.set('RateLimit-Limit', String(limit));
    ctx.set('RateLimit-Remaining', String(Math.max(0, limit - hit.used)));
    ctx.set('RateLimit-Reset', String(hit.resetSeconds));
    if (!hit.accepted) {
      const retryAfter = hit.retryAfterSeconds;
      throw new ApiError(429, 'RATE_LIMIT_EXCEEDED', `Rate limit of ${limit} requests per minute exceeded`, {
        details: { limit, retryAfter },
        headers: { 'Retry-After': String(retryAfter) },
        suggestion: `Retry after ${retryAfter} seconds`,
      });
    }
    await next();
  };
}
