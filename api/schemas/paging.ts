import { z } from 'zod';
import { withFallback } from './zod';

/** A page size (`limit`, a segment's `pageSize`): 20 when absent or not a whole number, clamped to 1..100. */
export const pageLimit = withFallback(z.coerce.number().int(), 20)
  .default(20)
  .transform((n) => Math.min(Math.max(n, 1), 100));
