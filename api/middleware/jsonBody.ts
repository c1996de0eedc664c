import type { Context, Middleware } from 'koa';
import { ApiError, invalidJson } from '../../lib/errors';
import { contentEncodings, readDecodedBody } from '../http/bodyDecoding';
import { findJsonProblem, jsonTextTooDeep, MAX_JSON_DEPTH } from '../../lib/untrustedJson';

declare module 'koa' {
  interface Request {
    /** The parsed JSON body, set by jsonBody below (`{}` for an empty body); unvalidated. */
    body?: unknown;
  }
}

/** JSON bodies above this, after decoding, are refused with 413 (the CSV upload reads its own body). */
export const JSON_BODY_LIMIT_BYTES = 1024 * 1024;

const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ACCEPTED_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);
// A body must be an object or an array (RFC 7159 whitespace first); an empty body is `{}`.
const STRICT_JSON_START = /^[\x20\x09\x0a\x0d]*[[{]/;

/**
 * The one JSON body parser of the API, for every route: decodes the body (bodyDecoding), checks
 * its nesting depth on the text before parsing, parses it, then walks the value once (without
 * recursion) for text PostgreSQL cannot store and for prototype-poisoning keys. Each problem is a
 * 4xx in the envelope naming the field, before any route sees the body.
 *
 * Bodies of other types are left unread for the routes that take them (the CSV upload), but an
 * unsupported Content-Encoding is refused (415) whatever the type.
 */
export function jsonBody(options: { limitBytes?: number | ((ctx: Context) => number); leaveUnread?: (ctx: Context) => boolean } = {}): Middleware {
  const limitOf = typeof options.limitBytes === 'function' ? options.limitBytes : () => (options.limitBytes as number | undefined) ?? JSON_BODY_LIMIT_BYTES;
  return async (ctx, next) => {
    if (options.leaveUnread?.(ctx)) return next();
    const limitBytes = limitOf(ctx);
    if (!PARSED_METHODS.has(ctx.method) || (!ctx.request.length && !ctx.get('Transfer-Encoding'))) return next();
    contentEncodings(ctx.req);
    if (!ctx.is('application/json', 'application/*+json')) return next();

    const charset = ctx.request.charset;
    if (charset && !ACCEPTED_CHARSETS.has(charset.toLowerCase())) {
      throw new ApiError(415, 'BAD_REQUEST', `Unsupported charset "${charset.slice(0, 40)}": JSON bodies are UTF-8`);
    }
    const raw = await readDecodedBody(ctx.req, limitBytes);
    let text: string;
    try {
      // fatal: a body that is not UTF-8 is refused rather than stored with replacement characters;
      // a leading byte-order mark is dropped.
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      throw new ApiError(400, 'INVALID_REQUEST_BODY', 'The request body is not valid UTF-8');
    }
    ctx.request.body = parseJsonBody(text);
    await next();
  };
}

const tooDeep = (path?: string) =>
  new ApiError(400, 'INVALID_REQUEST_BODY', `JSON bodies may nest arrays and objects at most ${MAX_JSON_DEPTH} levels deep`, {
    details: { maxDepth: MAX_JSON_DEPTH, ...(path ? { field: path } : {}) },
  });

/** Text → value under the rules above. */
function parseJsonBody(text: string): unknown {
  if (text === '') return {};
  if (!STRICT_JSON_START.test(text)) throw invalidJson();
  if (jsonTextTooDeep(text)) throw tooDeep();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidJson();
  }
  const problem = findJsonProblem(value, { refusePrototypeKeys: true });
  if (!problem) return value;
  if (problem.code === 'too_deep') throw tooDeep(problem.path);
  if (problem.code === 'prototype_key') throw new ApiError(400, 'INVALID_REQUEST_BODY', problem.message, { details: { field: problem.path } });
  throw new ApiError(400, 'BAD_REQUEST', `${problem.path}: ${problem.message}`, {
    errors: [{ field: problem.path, message: problem.message, code: 'invalid_string' }],
  });
}
