import { z } from './zod';
import { emailAddress } from './commonFields';
import { contactData, subscribedFlag } from './contactSchemas';
import { MESSAGE_OWN_FIELDS } from '../../mail/mime/messageBuilder';
import { id, timestamp } from './responseFields';

/** Recipients one POST /v1/send may carry; each gets its own contact, rendering and email record. */
export const MAX_RECIPIENTS_PER_SEND = 100;
/** Attachments per email (specification, Limits). */
export const MAX_ATTACHMENTS = 10;
/** An HTML body; the whole message stays far below the 40 MB the specification allows. */
export const MAX_BODY_CHARACTERS = 5 * 1024 * 1024;
export const MAX_CUSTOM_HEADERS = 50;

const noControlCharacters = (s: string) => !/[\u0000-\u001f\u007f]/.test(s);

/** A display name: one line, so it cannot inject header lines. */
const displayName = z
  .string({ invalid_type_error: 'name must be a string' })
  .max(200)
  .refine(noControlCharacters, { message: 'Must not contain control characters (such as CR or LF)' });

const recipient = z.union([emailAddress, z.object({ name: displayName.optional(), email: emailAddress })], {
  errorMap: () => ({ message: 'Each recipient is an email address or an object { name, email }' }),
});

/** Headers Mailroom writes itself (the message's structure, identity, route, signature): one from the caller is refused. */
export const RESERVED_HEADER_NAMES = MESSAGE_OWN_FIELDS;

/** RFC 5322 field names: printable ASCII without the colon. */
const headerName = /^[!-9;-~]{1,100}$/;

const headers = z.record(z.unknown()).superRefine((value, ctx) => {
  const names = Object.keys(value);
  if (names.length > MAX_CUSTOM_HEADERS) {
    ctx.addIssue({ code: 'too_big', maximum: MAX_CUSTOM_HEADERS, type: 'array', inclusive: true, message: `At most ${MAX_CUSTOM_HEADERS} custom headers` });
  }
  for (const name of names) {
    const at = [name];
    if (!headerName.test(name)) {
      ctx.addIssue({
        code: 'custom',
        path: at,
        message: 'Header names are 1-100 printable ASCII characters without ":", CR or LF',
        params: { code: 'invalid_string' },
      });
      continue;
    }
    if (RESERVED_HEADER_NAMES.has(name.toLowerCase())) {
      ctx.addIssue({
        code: 'custom',
        path: at,
        message: `"${name}" is set by Mailroom and cannot be given as a custom header`,
        params: { code: 'invalid_string' },
      });
      continue;
    }
    const headerValue = value[name];
    if (typeof headerValue !== 'string') {
      ctx.addIssue({
        code: 'invalid_type',
        path: at,
        expected: 'string',
        received: headerValue === null ? 'null' : typeof headerValue,
        message: 'Header values must be strings',
      });
    } else if (/[\r\n\u0000]/.test(headerValue)) {
      ctx.addIssue({ code: 'custom', path: at, message: 'Header values must not contain CR or LF', params: { code: 'invalid_string' } });
    } else if (headerValue.length > 998) {
      ctx.addIssue({ code: 'too_big', path: at, maximum: 998, type: 'string', inclusive: true, message: 'Header values are at most 998 characters' });
    }
  }
}) as z.ZodType<Record<string, string>>;

const base64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 (line breaks allowed, as MIME tools write it) → its size once decoded; null when it is not base64. */
export function decodedBase64Size(value: string): number | null {
  const compact = value.replace(/[\r\n]/g, '');
  if (compact.length % 4 !== 0 || !base64.test(compact)) return null;
  const padding = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
  return (compact.length / 4) * 3 - padding;
}

const attachment = z.object({
  filename: z
    .string({ required_error: 'filename is required', invalid_type_error: 'filename must be a string' })
    .min(1)
    .max(255)
    .refine(noControlCharacters, { message: 'Must not contain control characters (such as CR or LF)' }),
  content: z
    .string({ required_error: 'content (base64) is required', invalid_type_error: 'content must be a base64 string' })
    .refine((s) => decodedBase64Size(s) !== null, { message: 'content must be standard base64' }),
  contentType: z
    .string({ invalid_type_error: 'contentType must be a string' })
    .max(255)
    .regex(/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/, 'contentType must be a MIME type such as application/pdf')
    .optional(),
  contentId: z
    .string({ invalid_type_error: 'contentId must be a string' })
    .min(1)
    .max(255)
    .regex(/^<?[!-;=?-~]+>?$/, 'contentId is printable ASCII without spaces')
    .transform((s) => s.replace(/^<|>$/g, ''))
    .optional(),
  disposition: z.enum(['attachment', 'inline']).optional(),
});

export const sendBody = z.object({
  to: z.union([
    recipient,
    z.array(recipient).min(1, 'to needs at least one recipient').max(MAX_RECIPIENTS_PER_SEND, `At most ${MAX_RECIPIENTS_PER_SEND} recipients per request`),
  ]),
  subject: z
    .string({ invalid_type_error: 'subject must be a string' })
    .min(1)
    .max(998)
    .refine((s) => !/[\r\n]/.test(s), { message: 'subject must not contain a newline' })
    .optional(),
  body: z.string({ invalid_type_error: 'body must be a string' }).min(1).max(MAX_BODY_CHARACTERS).optional(),
  template: z.string({ invalid_type_error: 'template must be a template id' }).uuid('template must be a template id (uuid)').optional(),
  from: z.union([emailAddress, z.object({ name: displayName.optional(), email: emailAddress })]).optional(),
  name: displayName.optional(),
  reply: emailAddress.optional(),
  data: contactData.optional(),
  subscribed: subscribedFlag,
  headers: headers.optional(),
  attachments: z.array(attachment).max(MAX_ATTACHMENTS, `At most ${MAX_ATTACHMENTS} attachments`).optional(),
});

export type SendBody = z.output<typeof sendBody>;

/** What POST /v1/send answers once every email is recorded and its delivery scheduled. */
export const sendResponse = z
  .object({
    success: z.literal(true),
    data: z
      .object({
        /** Per recipient, in the order given: its contact, and the id of its email record (GET /emails/{id}). */
        emails: z.array(z.object({ contact: z.object({ id, email: z.string() }).strict(), email: id }).strict()),
        timestamp,
      })
      .strict(),
  })
  .strict()
  .openapi('SendResult');
