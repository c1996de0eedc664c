import { z, type ZodTypeAny } from 'zod';
import { ApiError, validationFailed } from '../../lib/errors';
import { toFieldErrors } from '../../lib/zodIssues';

// Routes and schemas take their validation helpers from here; the two below live in lib/ because
// services check ids and zod values too.
export { toFieldErrors } from '../../lib/zodIssues';
export { isUuid, uuidPattern } from '../../lib/uuid';

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
