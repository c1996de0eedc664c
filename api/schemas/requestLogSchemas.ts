import { z } from './zod';
import { cursorPage, timestamp } from './responseFields';
import { limitParam } from './analyticsSchemas';
import { microsecondInstant } from './emailRecordSchemas';
import { enumOf } from '../../shared/zodFields';
import { MAX_LOGGED_PATH, REQUEST_AUTH_KINDS, STATUS_CLASSES, type RequestAuthKind } from '../../db/requestLog/requestLogRepository';

/** `auth=secret,public`: one or more of the kinds, comma-separated. */
const authList = z
  .string()
  .max(100)
  .transform((s) =>
    s
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  )
  .superRefine((kinds, ctx) => {
    const unknown = kinds.filter((k) => !(REQUEST_AUTH_KINDS as readonly string[]).includes(k));
    if (unknown.length) ctx.addIssue({ code: 'custom', message: `auth must be a comma-separated list of ${REQUEST_AUTH_KINDS.join(', ')}` });
    if (!kinds.length) ctx.addIssue({ code: 'custom', message: `Name at least one of ${REQUEST_AUTH_KINDS.join(', ')}` });
  })
  .transform((kinds) => [...new Set(kinds)] as RequestAuthKind[]);

/** GET /requests. */
export const requestLogQuery = z.object({
  limit: limitParam(50, 100),
  cursor: z.string().max(1000).optional(),
  status: enumOf('status', STATUS_CLASSES).optional().describe('A status class: 2xx, 3xx, 4xx or 5xx'),
  path: z
    .string()
    .max(MAX_LOGGED_PATH)
    .regex(/^\/[\x21-\x7e]*$/, 'Must be a path starting with /')
    .optional()
    .describe('A route template (`/contacts/:id`) or the start of the path (`/v1/`)'),
  auth: authList.optional().describe('How the request was authenticated: `secret`, `public`, `session`; several comma-separated'),
});

export const requestLogCursor = z.object({ t: microsecondInstant, id: z.string().regex(/^\d{1,19}$/) });

// Responses.

export const loggedRequestResponse = z
  .object({
    id: z.string().describe('The log row’s id'),
    method: z.string(),
    path: z.string().describe('The path asked for, without the query string'),
    route: z.string().nullable().describe('The route’s template (`/contacts/:id`); null when no route matched'),
    status: z.number().int(),
    durationMs: z.number().describe('From arrival to the answer, in milliseconds'),
    auth: z.enum(REQUEST_AUTH_KINDS).describe('The secret key, the public key, or a dashboard session with X-Project-Id'),
    requestId: z.string().describe('The X-Request-ID the answer carried'),
    createdAt: timestamp.describe('When the request arrived'),
  })
  .strict()
  .openapi('LoggedRequest');

export const requestLogResponse = cursorPage(loggedRequestResponse).strict();
