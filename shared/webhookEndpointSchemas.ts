import { z } from 'zod';
import { optional, text } from './zodFields';

/**
 * The request bodies of outbound webhook endpoints (contract 18), as the API parses them
 * (api/schemas/webhookEndpointSchemas.ts re-exports them) and the dashboard's forms check them.
 * The URL's form is checked here; whether its host may be called (the address rules of WEBHOOK
 * steps, after DNS) needs the server: services/webhooks/webhookEndpoints.ts.
 */

export const WEBHOOK_ENDPOINT_LIMITS = {
  url: 2048,
  /** Patterns per endpoint. */
  events: 100,
  /** One pattern: an event name is at most 200 characters (POST /v1/track). */
  pattern: 200,
  description: 500,
  perProject: 20,
} as const;

/** Why `url` cannot be an endpoint's, or null. */
export function webhookEndpointUrlProblem(url: string): string | null {
  // Before parsing: WHATWG URL parsing silently drops tabs and line breaks.
  if (/\s|[\u0000-\u001f\u007f]/.test(url)) return 'url must not contain spaces, line breaks or other control characters';
  if (!/^https?:\/\//i.test(url)) return 'url must start with https:// or http://';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'url is not a valid URL';
  }
  if (!parsed.hostname) return 'url needs a host';
  if (parsed.username || parsed.password) return 'url must not carry a user name or password';
  if (parsed.port === '0') return 'url must not name port 0';
  return null;
}

const PATTERN_RULE = 'an event name (email.bounced), a prefix wildcard ending in .* (email.*, segment.*) or * alone';

/** Why `pattern` cannot subscribe an endpoint to events, or null. `*` is a wildcard only as the whole pattern or after the last dot. */
export function eventPatternProblem(pattern: string): string | null {
  if (/[\u0000-\u001f\u007f]/.test(pattern)) return 'Event patterns must not contain control characters';
  if (pattern === '*' || !pattern.includes('*')) return null;
  const prefix = pattern.endsWith('.*') ? pattern.slice(0, -2) : null;
  if (prefix && !prefix.includes('*') && !prefix.endsWith('.')) return null;
  return `"${pattern.slice(0, 100)}" is not ${PATTERN_RULE}`;
}

const endpointUrl = text('url')
  .min(1, 'url must not be empty')
  .max(WEBHOOK_ENDPOINT_LIMITS.url, `url must be at most ${WEBHOOK_ENDPOINT_LIMITS.url} characters`)
  .superRefine((url, ctx) => {
    const problem = url ? webhookEndpointUrlProblem(url) : null;
    if (problem) ctx.addIssue({ code: 'invalid_string', validation: 'url', message: problem });
  })
  .describe('https:// or http://; its host may not be (or resolve to) a loopback, private, link-local or metadata address');

const eventPattern = z
  .string({ invalid_type_error: 'Each event pattern must be a string' })
  .trim()
  .min(1, 'An event pattern must not be empty')
  .max(WEBHOOK_ENDPOINT_LIMITS.pattern, `An event pattern is at most ${WEBHOOK_ENDPOINT_LIMITS.pattern} characters`)
  .superRefine((pattern, ctx) => {
    const problem = eventPatternProblem(pattern);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe(`A pattern: ${PATTERN_RULE}`);

/** 1-100 patterns; a repeated one is kept once. */
const eventPatterns = z
  .array(eventPattern, { required_error: 'events is required', invalid_type_error: 'events must be an array of event patterns' })
  .min(1, `events needs at least one pattern: ${PATTERN_RULE}`)
  .max(WEBHOOK_ENDPOINT_LIMITS.events, `events holds at most ${WEBHOOK_ENDPOINT_LIMITS.events} patterns`)
  .transform((patterns) => [...new Set(patterns)]);

/** Null or "" leaves an endpoint without a description. */
const description = optional(
  text('description').trim().max(WEBHOOK_ENDPOINT_LIMITS.description, `description must be at most ${WEBHOOK_ENDPOINT_LIMITS.description} characters`),
);

const enabled = z.boolean({ invalid_type_error: 'enabled must be true or false' });

/** POST /webhook-endpoints. */
export const webhookEndpointBody = z.object({ url: endpointUrl, events: eventPatterns, description, enabled: enabled.optional() });

/** PATCH /webhook-endpoints/:id: the fields given change; `enabled: true` re-enables a disabled endpoint. */
export const webhookEndpointPatchBody = z
  .object({ url: endpointUrl.optional(), events: eventPatterns.optional(), description, enabled: enabled.optional() })
  .refine((b) => b.url !== undefined || b.events !== undefined || b.description !== undefined || b.enabled !== undefined, {
    message: 'Give at least one of url, events, description, enabled',
  });

export type WebhookEndpointBody = z.output<typeof webhookEndpointBody>;
export type WebhookEndpointPatch = z.output<typeof webhookEndpointPatchBody>;
