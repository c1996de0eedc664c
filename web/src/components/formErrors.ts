import type { FieldValues, Path, UseFormSetError } from 'react-hook-form';
import { ApiError } from '../api/client';

/**
 * Puts the API's field errors (a 422's `errors` items) on the form's fields, where the user looks;
 * the whole message is shown above the button too (ErrorNotice), with its request id.
 */
export function showFieldErrors<Values extends FieldValues>(setError: UseFormSetError<Values>, error: unknown, fields: readonly Path<Values>[]): void {
  if (!(error instanceof ApiError)) return;
  for (const { field, message } of error.fieldErrors) {
    const known = fields.find((name) => name === field);
    if (known) setError(known, { type: 'server', message });
  }
}
