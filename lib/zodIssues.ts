import type { ZodIssue } from 'zod';
import type { FieldError } from './errors';

/**
 * zod issues → the `errors` items of the envelope (zod v3 codes, dot paths). Here rather than in
 * api/ because services check values with zod too (a step's config) and answer in the same items.
 */
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
