import { z, type ZodIssue, type ZodTypeAny } from 'zod';
import { ApiError, validationFailed, type FieldError } from '../../lib/errors';

/** zod issues → the `errors` items of the envelope (zod v3 codes, dot paths). */
export function toFieldErrors(issues: ZodIssue[]): FieldError[] {
  return issues.map((issue) => {
    const item: FieldError = {
      field: issue.path.length ? issue.path.join('.') : '(body)',
      message: issue.message,
      code: issue.code === 'custom' && issue.params?.code ? String(issue.params.code) : issue.code,
    };
    if (issue.code === 'invalid_type') item.received = issue.received;
    return item;
  });
}

/** Parses a JSON body: 422 VALIDATION_ERROR with field items when it does not fit. Unknown keys are dropped. */
export function parseBody<S extends ZodTypeAny>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw validationFailed(toFieldErrors(result.error.issues));
  return result.data;
}

/** Parses query parameters: 400 BAD_REQUEST naming the parameter. */
export function parseQuery<S extends ZodTypeAny>(schema: S, query: unknown): z.output<S> {
  const result = schema.safeParse(query ?? {});
  if (!result.success) {
    const errors = toFieldErrors(result.error.issues);
    throw new ApiError(400, 'BAD_REQUEST', `Invalid query parameter: ${errors.map((e) => e.field).join(', ')}`, { errors });
  }
  return result.data;
}

/** A path parameter that must be a UUID: anything else cannot name a resource, so it is a 404. */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}
