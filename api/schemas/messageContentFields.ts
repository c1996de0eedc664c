import { domainToASCII } from 'node:url';
import type { ZodTypeAny } from 'zod';
import { withFallback, z } from './zod';
import { enumOf, optional, text } from '../../shared/zodFields';

/**
 * The fields a template and a campaign share (name, description, subject, body, sender), with one
 * set of limits and messages naming the field. The specification gives only the subject's limit.
 */
export const MESSAGE_CONTENT_LIMITS = {
  name: 200,
  description: 1000,
  subject: 998,
  /** Characters; the JSON body limit (1 MB) bounds it as well. */
  body: 1_000_000,
  fromName: 200,
} as const;

/** Offset pages (templates, campaigns): pageSize above this is clamped to it; page above MAX_PAGE is refused. */
export const MAX_PAGE_SIZE = 100;
export const MAX_PAGE = 1_000_000;

const CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f]*$/;

/** One line of text: CR/LF would end a mail header early (header injection), so it is refused, not repaired. */
export const singleLine = (field: string, max: number) =>
  text(field)
    .regex(CONTROL_CHARACTERS, `${field} must not contain line breaks or other control characters`)
    .trim()
    .min(1, `${field} must not be empty`)
    .max(max, `${field} must be at most ${max} characters`);

/**
 * Addresses as lib/zodFields.ts emailAddress stores them (trimmed, lower-cased), with
 * messages naming the field. An internationalised domain is stored in its ASCII (punycode) form,
 * the form sender domains are stored in, so `hi@bücher.example` is covered by `Bücher.example`.
 */
export const senderAddress = (field: string) =>
  text(field)
    .trim()
    .transform(asciiDomain)
    .pipe(
      z
        .string()
        .max(254, `${field} must be at most 254 characters`)
        .email(`${field} must be a bare email address (such as hello@example.com; a display name goes in fromName)`),
    )
    .transform((s) => s.toLowerCase());

function asciiDomain(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0 || /^[\x00-\x7f]*$/.test(address.slice(at + 1))) return address;
  // An empty answer means no valid domain: keep the input, which the email check then refuses.
  return `${address.slice(0, at + 1)}${domainToASCII(address.slice(at + 1)) || address.slice(at + 1)}`;
}

/** name, description, subject, body, from, fromName, replyTo and type, as both resources take them. */
export function messageContentFields<T extends readonly [string, ...string[]]>(types: T) {
  const limits = MESSAGE_CONTENT_LIMITS;
  return {
    name: singleLine('name', limits.name),
    description: optional(text('description').max(limits.description, `description must be at most ${limits.description} characters`)),
    subject: singleLine('subject', limits.subject),
    body: text('body')
      .max(limits.body, `body must be at most ${limits.body} characters`)
      .refine((s) => s.trim().length > 0, 'body must not be empty'),
    from: senderAddress('from'),
    fromName: optional(
      text('fromName')
        .regex(CONTROL_CHARACTERS, 'fromName must not contain line breaks or other control characters')
        .trim()
        .max(limits.fromName, `fromName must be at most ${limits.fromName} characters`)
        .transform((s) => s || null),
    ),
    replyTo: optional(senderAddress('replyTo')),
    type: enumOf('type', types),
  };
}

/**
 * The query of an offset-paginated list (GET /templates, GET /campaigns): `page`, `pageSize`
 * (clamped to MAX_PAGE_SIZE), `search`, and `sort` / `dir`, whose unrecognised values fall back to
 * the defaults (specification). Each list adds its own filter.
 */
/** `page` (1..MAX_PAGE) and `pageSize` (clamped to MAX_PAGE_SIZE) of every offset-paginated list. */
export const offsetPageFields = {
  page: z.coerce
    .number({ invalid_type_error: 'page must be an integer' })
    .int('page must be an integer')
    .min(1, 'page must be at least 1')
    .max(MAX_PAGE, `page must be at most ${MAX_PAGE}`)
    .default(1),
  pageSize: z.coerce
    .number({ invalid_type_error: 'pageSize must be an integer' })
    .int('pageSize must be an integer')
    .min(1, 'pageSize must be at least 1')
    .default(20)
    .transform((n) => Math.min(n, MAX_PAGE_SIZE)),
};

export function offsetListQuery<S extends readonly ['name', 'createdAt', 'updatedAt']>(sorts: S) {
  return {
    ...offsetPageFields,
    search: z.string({ invalid_type_error: 'search must be given once' }).max(200, 'search must be at most 200 characters').optional(),
    sort: withFallback(z.enum(sorts), 'createdAt').default('createdAt'),
    dir: withFallback(z.enum(['asc', 'desc']), 'desc').default('desc'),
  };
}

/** The answer of an offset-paginated list: `{ data, page, pageSize, total, totalPages }`. */
export function offsetPage<T extends ZodTypeAny>(item: T) {
  return z.object({ data: z.array(item), page: z.number().int(), pageSize: z.number().int(), total: z.number().int(), totalPages: z.number().int() }).strict();
}
