import type { Middleware } from 'koa';
import type { AppState } from '../state';
import { ApiError } from '../../lib/errors';
import { rateLimitRepository, type RateLimitHit } from '../../db/repositories/rateLimitRepository';

export interface RateLimits {
  /** RATE_LIMIT_PER_MINUTE: requests with a key, per project; 0 = none. */
  perProject: number;
  /** SESSION_RATE_LIMIT_PER_MINUTE: requests of a dashboard session (cookie + X-Project-Id), per user; 0 = none. */
  perSessionUser: number;
}

/**
 * The rate limits of contract section 4, counted in PostgreSQL so that every API process enforces
 * one shared budget: `perProject` requests per project per rolling minute for calls with a key,
 * and a budget of their own per user for a dashboard session's calls, which never touch the
 * project's (open dashboards cannot starve the project's /v1/send). No 60-second window ever
 * holds more than the limit of accepted requests; refused requests are not counted. The key
 * middleware usually counted a key's request already (same statement as the key lookup).
 */
export function rateLimit(limits: RateLimits): Middleware<AppState> {
  return async (ctx, next) => {
    const { project, user } = ctx.state;
    if (!project) return next();
    const bySession = ctx.state.keyKind === 'session' && user !== undefined;
    const limit = bySession ? limits.perSessionUser : limits.perProject;
    if (limit <= 0) return next();
    const hit: RateLimitHit = bySession
      ? await rateLimitRepository.hitSession(ctx.state.em, user.id, { limit })
      : (ctx.state.rateLimitHit ?? (await rateLimitRepository.hit(ctx.state.em, project.id, { limit }))[0]);
    ctx.set('RateLimit-Limit', String(limit));
    ctx.set('RateLimit-Remaining', String(Math.max(0, limit - hit.used)));
    ctx.set('RateLimit-Reset', String(hit.resetSeconds));
    if (!hit.accepted) {
      const retryAfter = hit.retryAfterSeconds;
      const message = bySession
        ? `Rate limit of ${limit} requests per minute for your dashboard sessions exceeded`
        : `Rate limit of ${limit} requests per minute exceeded`;
      throw new ApiError(429, 'RATE_LIMIT_EXCEEDED', message, {
        details: { limit, retryAfter },
        headers: { 'Retry-After': String(retryAfter) },
        suggestion: `Retry after ${retryAfter} seconds`,
      });
    }
    await next();
  };
}
