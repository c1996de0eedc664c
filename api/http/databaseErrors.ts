import { ApiError, conflict, validationFailed } from '../../lib/errors';

/**
 * What a refused write means to the caller, by constraint. The database holds these rules
 * for every write path; this turns its refusals into the API's 4xx.
 */
const constraintMeanings: Record<string, () => ApiError> = {
  contacts_data_limits: () => validationFailed([{ field: 'data', message: 'The contact data would exceed 100 keys or 64 KB as JSON', code: 'too_big' }]),
  contacts_project_email_unique: () => conflict('Another contact of this project already uses this email'),
  // Two edits racing past the route's own checks: the schema keeps the rule.
  workflow_transitions_one_way_out: () => conflict('The step already has a transition for this branch or outcome'),
  workflow_steps_template_id_fkey: () =>
    conflict('A workflow SEND_EMAIL step and its template changed at the same time (the template is in use, or was just deleted); try again'),
};

/**
 * Errors that mean the database cannot be reached or is going away, not that the request was
 * wrong: SQLSTATE class 08 (connection exceptions; 08P01 is a protocol violation), 57P01–57P03
 * (shutting down, crashed, starting up), 53300 (too many connections); the driver's socket errors;
 * a connection the server closed; no pooled connection within the pool's timeout.
 */
const UNAVAILABLE_SQLSTATES = /^(08(?!P01)...|57P0[123]|53300)$/;
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|Unable to acquire a connection|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|the database system is (shutting down|starting up|in recovery mode)|terminating connection due to administrator command/i;

/** Seconds a client is told to wait before trying again while the database is away. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

export function databaseUnavailable(err: unknown): ApiError | undefined {
  const e = err as { code?: unknown; sqlState?: unknown; errno?: unknown; message?: unknown; cause?: unknown };
  if (!e || typeof e !== 'object') return undefined;
  const codes = [e.code, e.sqlState, e.errno].filter((c): c is string => typeof c === 'string');
  const unavailable =
    codes.some((c) => UNAVAILABLE_SQLSTATES.test(c) || UNAVAILABLE_SOCKET_CODES.has(c)) ||
    (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) ||
    (e.cause !== undefined && e.cause !== err && databaseUnavailable(e.cause) !== undefined);
  if (!unavailable) return undefined;
  return new ApiError(503, 'SERVICE_UNAVAILABLE', 'The database is unavailable; try again shortly.', {
    headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
  });
}

export function fromDatabaseError(err: unknown): ApiError | undefined {
  const away = databaseUnavailable(err);
  if (away) return away;
  const e = err as { code?: unknown; constraint?: unknown; sqlState?: unknown };
  const code = typeof e?.code === 'string' ? e.code : typeof e?.sqlState === 'string' ? e.sqlState : undefined;
  if (!code || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (typeof e.constraint === 'string' && constraintMeanings[e.constraint]) return constraintMeanings[e.constraint]();
  // 08P01 "invalid message format": a text parameter carried a NUL character, which PostgreSQL
  // text cannot hold. The request middleware refuses NULs in URLs; this covers other routes in.
  if (code === '08P01' && /invalid message format/i.test(String((err as Error).message))) {
    return new ApiError(400, 'BAD_REQUEST', 'Text values must not contain NUL characters');
  }
  // Class 22 (data exception): a value the database cannot take. Validation should have caught it
  // first; answering 400 keeps "no input produces a 500" true if it did not.
  if (code.startsWith('22')) return new ApiError(400, 'BAD_REQUEST', 'A value in the request cannot be stored');
  return undefined;
}
