import crypto from 'node:crypto';
import type { Middleware } from 'koa';

const acceptable = /^[\x21-\x7e]{1,200}$/;

/** Every response carries X-Request-ID: the caller's own when it is 1-200 printable ASCII characters. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-ID');
    ctx.state.requestId = acceptable.test(incoming) ? incoming : crypto.randomUUID();
    ctx.set('X-Request-ID', ctx.state.requestId);
    await next();
  };
}
