import { z } from 'zod';
import { ERROR_CODES } from '../../lib/errors';

/** One validation item (contract 2): `field` is a dot path, `code` the zod v3 vocabulary plus `reserved_event`. */
export const fieldErrorSchema = z.object({
  field: z.string(),
  message: z.string(),
  code: z.string(),
  received: z.unknown().optional(),
});

/** The error envelope every 4xx and 5xx answers with (the specification's Errors section). */
export const errorEnvelopeSchema = z.object({
  success: z.literal(false),
  error: z.object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    statusCode: z.number().int(),
    /** The response's X-Request-ID. */
    requestId: z.string(),
    errors: z.array(fieldErrorSchema).optional(),
    details: z.record(z.unknown()).optional(),
    suggestion: z.string().optional(),
  }),
  timestamp: z.string(),
});

/** The specification's plain 400 body, used only by POST /contacts, /templates and /segments. */
export const plainErrorSchema = z.object({ error: z.string() });
