import { z } from 'zod';

/** A page size (`limit`, a segment's `pageSize`): 20 when absent or not a whole number, clamped to 1..100. */
export const pageLimit = z.coerce
  .number()
  .int()
  .catch(20)
  .default(20)
  .transform((n) => Math.min(Math.max(n, 1), 100));
