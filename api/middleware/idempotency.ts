import type { Middleware } from 'koa';
import type { AppState } from '../state';
import { ApiError, badRequest } from '../../lib/errors';
import { idempotencyKeyRepository } from '../../db/repositories/idempotencyKeyRepository';

const validKey = /^[\x20-\x7e]{1,255}$/;

/**
 * `Idempotency-Key` (contract section 4): per project, shared by every route that mounts this
 * middleware. The first request with a key is performed; any other (concurrent or later, within
 * the TTL) is refused with 409 and performs nothing. A first request ending 4xx releases its key.
 *
 * The outcome is written after the answer, unless the route wrote it in the transaction that did
 * its work (`ctx.state.idempotency.outcomeIn`, POST /v1/send): then it committed with the work, so
 * a process killed between that commit and the answer leaves the key settled, not in flight for
 * its whole TTL.
 */
export function idempotency(ttlHours: number): Middleware<AppState> {
  return async (ctx, next) => {
    const key = ctx.get('Idempotency-Key');
    if (ctx.headers['idempotency-key'] === undefined) return next();
    if (!validKey.test(key)) {
      throw badRequest('Idempotency-Key must be 1-255 printable ASCII characters', {
        errors: [{ field: 'Idempotency-Key', message: 'Must be 1-255 printable ASCII characters', code: 'invalid_string' }],
      });
    }
    const project = ctx.state.project!;
    const request = `${ctx.method} ${ctx.path}`;
    const em = ctx.state.em;
    if (!(await idempotencyKeyRepository.claim(em, project.id, key, request, ttlHours))) {
      const existing = await idempotencyKeyRepository.find(em, project.id, key);
      throw new ApiError(409, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key has already been used for this project', {
        details: {
          key,
          originalRequest: existing?.request ?? null,
          originalRequestAt: existing?.createdAt.toISOString() ?? null,
          originalStatusCode: existing?.statusCode ?? null,
        },
        suggestion: 'Use a new Idempotency-Key for a new request',
      });
    }
    // The status a route wrote in its work's transaction; that transaction committed when the
    // route answers with it (a rolled-back one ends the request with an error instead).
    const inTransaction: { status: number | null } = { status: null };
    ctx.state.idempotency = {
      outcomeIn: (written) => async (tx) => {
        await idempotencyKeyRepository.complete(tx, project.id, key, written);
        inTransaction.status = written;
      },
    };
    let status = 500;
    try {
      await next();
      status = ctx.status;
    } catch (err) {
      status = err instanceof ApiError ? err.status : 500;
      throw err;
    } finally {
      if (status !== inTransaction.status) {
        if (status >= 400 && status < 500) await idempotencyKeyRepository.release(em, project.id, key);
        else await idempotencyKeyRepository.complete(em, project.id, key, status);
      }
    }
  };
}
