import type { Context, Middleware } from 'koa';
import type { Logger } from '../../lib/logger';
import { ApiError, invalidJson, payloadTooLarge, badRequest, validationFailed } from '../../lib/errors';
import { fromDatabaseError } from '../http/databaseErrors';
import { TemplateRenderError } from '../../mail/rendering/renderEmail';
import { BillingLimitExceeded } from '../../services/billing/usageCaps';

function envelope(ctx: Context, err: ApiError) {
  return {
    success: false,
    error: {
      code: err.code,
      message: err.message,
      statusCode: err.status,
      requestId: ctx.state.requestId,
      ...(err.options.errors ? { errors: err.options.errors } : {}),
      ...(err.options.details ? { details: err.options.details } : {}),
      ...(err.options.suggestion ? { suggestion: err.options.suggestion } : {}),
    },
    timestamp: new Date().toISOString(),
  };
}

/**
 * Errors thrown in the http-errors style (by third-party middleware) carry a status and a type. The JSON parser (jsonBody) and body decoding throw ApiErrors themselves.
 */
function fromParserError(err: any): ApiError | undefined {
  const status = err?.status ?? err?.statusCode ?? err?.httpCode;
  if (status === 413 || err?.type === 'entity.too.large') return payloadTooLarge();
  if (err?.type === 'entity.parse.failed' || (status === 400 && typeof err?.body === 'string')) return invalidJson();
  if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') {
    return new ApiError(415, 'BAD_REQUEST', 'Unsupported request body encoding');
  }
  if (status === 405) return new ApiError(405, 'METHOD_NOT_ALLOWED', err.message || 'Method not allowed');
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return status === 400 ? badRequest(err.message || 'Bad request') : new ApiError(status, 'BAD_REQUEST', err.message || 'Bad request');
  }
  return undefined;
}

/** A template that compiled but could not be rendered for this request (a loop over its budget, ...). */
function fromTemplateError(thrown: unknown): ApiError | undefined {
  if (!(thrown instanceof TemplateRenderError)) return undefined;
  return validationFailed(thrown.problems.map((p) => ({ field: p.field, message: p.message, code: 'custom' })));
}

/** A send a monthly cap cannot take (contract 17): 402 naming the category. */
function fromBillingLimit(thrown: unknown): ApiError | undefined {
  if (!(thrown instanceof BillingLimitExceeded)) return undefined;
  return new ApiError(402, 'BILLING_LIMIT_EXCEEDED', thrown.message, {
    details: { category: thrown.category, limit: thrown.limit, usage: thrown.used, requested: thrown.requested },
  });
}

/**
 * Turns every thrown error into the response: ApiErrors into the envelope, parser errors into
 * their 4xx, anything else into a logged 500 that names only the request id.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError(404, 'RESOURCE_NOT_FOUND', `Route not found: ${ctx.method} ${ctx.path}`, {
          details: { resource: 'route', id: `${ctx.method} ${ctx.path}` },
        });
      }
    } catch (thrown) {
      let err =
        thrown instanceof ApiError ? thrown : (fromTemplateError(thrown) ?? fromBillingLimit(thrown) ?? fromDatabaseError(thrown) ?? fromParserError(thrown));
      if (err && !(thrown instanceof ApiError) && err.status === 400 && err.code === 'BAD_REQUEST') {
        logger.warn({ err: thrown, requestId: ctx.state.requestId }, 'database refused a value that validation let through');
      }
      if (!err) {
        logger.error({ err: thrown, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path }, 'unhandled error');
        err = new ApiError(500, 'INTERNAL_SERVER_ERROR', 'An unexpected error occurred');
      }
      ctx.status = err.status;
      for (const [name, value] of Object.entries(err.options.headers ?? {})) ctx.set(name, value);
      ctx.body = err.options.plain ? { error: err.message } : envelope(ctx, err);
    }
  };
}
