import { z } from './zod';
import { cursorPage, id, timestamp } from './responseFields';
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

// Responses.

export const suppressionResponse = z
  .object({
    email: z.string(),
    reason: z.enum(['BOUNCE', 'COMPLAINT', 'MANUAL']),
    /** The email whose bounce or complaint put the address on the list; null for a manual entry. */
    emailId: id.nullable(),
    createdAt: timestamp,
  })
  .strict()
  .openapi('Suppression');

export const suppressionListResponse = cursorPage(suppressionResponse).strict();
