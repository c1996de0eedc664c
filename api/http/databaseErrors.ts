import { ApiError, conflict, validationFailed } from '../../lib/errors';
import { isDatabaseUnavailable } from '../../db/databaseAvailability';

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

/** Seconds a client is told to wait before trying again while the database is away. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

/** The answer while PostgreSQL cannot be reached or is going away (db/databaseAvailability.ts): 503, try again shortly. */
export function databaseUnavailable(err: unknown): ApiError | undefined {
  if (!isDatabaseUnavailable(err)) return undefined;
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
