import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { idempotency } from '../middleware/idempotency';
import { trackEvent } from '../../services/events/eventTracking';
import type { Middleware } from 'koa';
import { trackBody, trackResponse } from '../schemas/eventSchemas';
import { describedRoutes, type RouteDoc } from '../openapi/describedRouter';

/** Browsers call /v1/track with the public key, so it answers CORS preflights. */
const publicCors: Middleware<AppState> = async (ctx, next) => {
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, Idempotency-Key, X-Request-ID');
  ctx.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
  ctx.set('Access-Control-Expose-Headers', 'X-Request-ID, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After');
  ctx.set('Access-Control-Max-Age', '86400');
  if (ctx.method === 'OPTIONS') {
    ctx.status = 204;
    return;
  }
  await next();
};

/**
 * POST /v1/track (public key) and its internal alias POST /events/track (secret key): the contact
 * upserted and the event recorded by services/events/eventTracking.ts.
 */
export function trackRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Events', access: 'public' });
  const once = idempotency(deps.config.idempotencyKeyTtlHours);

  const track: Middleware<AppState> = async (ctx) => {
    const body = parseBody(trackBody, ctx.request.body);
    const { contact, event } = await trackEvent(deps, ctx.state.project!.id, body);
    ctx.body = {
      success: true,
      data: { contact: contact.id, event: event.id, timestamp: event.createdAt.toISOString() },
    } satisfies z.input<typeof trackResponse>;
  };

  const doc: RouteDoc = {
    summary: 'Track an event',
    description:
      'Creates or updates the contact by email address (new contacts are subscribed unless `subscribed` says otherwise; ' +
      '`preserveExistingSubscription` applies `subscribed` to new contacts only), merges `data` into its data under the data rules, ' +
      'and records the event with that data, which may start or resume workflows. ' +
      'Names Mailroom records itself are refused (422): every `email.` name, `contact.subscribed`, `contact.unsubscribed`, and segment entry and exit events. ' +
      'With an `Idempotency-Key` header, another request with the same key is refused (409) and records nothing; a request refused with a 4xx releases its key.',
    body: {
      schema: trackBody,
      example: { email: 'ada@example.com', event: 'signed_up', data: { plan: 'pro', referrer: 'newsletter' } },
    },
    responses: {
      200: {
        description: 'The contact and the recorded event',
        schema: trackResponse,
        example: {
          success: true,
          data: {
            contact: '0b6f3c1e-5d2a-4f8e-9a41-7c3d2e1f0a9b',
            event: '5e2c9d71-8a4b-4c3f-b6e0-2f1d7a9c8b34',
            timestamp: '2026-11-20T16:40:31.088Z',
          },
        },
      },
    },
  };

  route.options(
    '/v1/track',
    {
      summary: 'CORS preflight of POST /v1/track',
      description: 'Browsers ask before calling POST /v1/track from another origin; any origin may, with the headers the call needs.',
      access: 'none',
      responses: {
        204: {
          description: 'Allowed',
          headers: {
            'Access-Control-Allow-Origin': { description: '`*`' },
            'Access-Control-Allow-Headers': { description: 'Authorization, Content-Type, Idempotency-Key, X-Request-ID' },
            'Access-Control-Allow-Methods': { description: 'POST, OPTIONS' },
          },
        },
      },
    },
    publicCors,
  );
  route.post(
    '/v1/track',
    { ...doc, description: `Called from browsers with the public key (it answers CORS preflights). ${doc.description}` },
    publicCors,
    ...keyAuthenticated('public', deps),
    once,
    track,
  );
  route.post(
    '/events/track',
    { ...doc, summary: 'Track an event (secret key)', description: `POST /v1/track for servers, with the secret key. ${doc.description}`, access: 'secret' },
    ...keyAuthenticated('secret', deps),
    once,
    track,
  );
  return router;
}
