import type { Middleware } from 'koa';
import { badRequest } from '../../lib/errors';

/**
 * PostgreSQL text cannot hold NUL characters, and no path segment or query value Mailroom
 * reads has a use for one: a URL carrying `%00` is refused before it reaches a route.
 */
export function rejectNulCharacters(): Middleware {
  return async (ctx, next) => {
    if (/%00/.test(ctx.url)) throw badRequest('URLs must not contain NUL characters (%00)');
    await next();
  };
}
