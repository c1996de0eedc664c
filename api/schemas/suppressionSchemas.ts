import { z } from 'zod';
import { emailAddress } from './commonFields';
import { limitParam } from './analyticsSchemas';
import { microsecondInstant } from './emailRecordSchemas';

/** GET /suppressions (contract 20): `email` is the whole address, normalised as every stored address is. */
export const suppressionListQuery = z.object({
  limit: limitParam(20, 100),
  cursor: z.string().max(1000).optional(),
  email: emailAddress.optional(),
});

export const suppressionCursor = z.object({ t: microsecondInstant, email: z.string().max(320) });

/** POST /suppressions. */
export const suppressionBody = z.object({ email: emailAddress });
