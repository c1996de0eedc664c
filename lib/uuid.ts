/** A UUID in its text form, any case: what an id in a path or a body must look like. */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` can name a row: anything else cannot, so callers answer it like an unknown id (404). */
export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}
