import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { idempotency } from '../middleware/idempotency';
import { splitDataChanges } from '../../services/contacts/contactDataRules';
import type { Middleware } from 'koa';
import { trackBody } from '../schemas/eventSchemas';

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
 * POST /v1/track (public key) and its internal alias POST /events/track (secret key): upsert the
 * contact by email under the data rules and record the event, in one statement shared with the
 * other tracks in flight (ContactWriteBatcher); then hand the recorded events to the triggers.
 */
export function trackRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const once = idempotency(deps.config.idempotencyKeyTtlHours);

  const track: Middleware<AppState> = async (ctx) => {
    const body = parseBody(trackBody, ctx.request.body);
    const changes = splitDataChanges(body.data);
    // New contacts are subscribed unless told otherwise; an explicit value changes an existing
    // contact, unless preserveExistingSubscription asks to apply it to new contacts only.
    const result = await deps.contactWrites.write(
      ctx.state.project!.id,
      {
        email: body.email,
        subscribedIfNew: body.subscribed ?? true,
        subscribedIfExisting: body.preserveExistingSubscription ? undefined : body.subscribed,
        data: changes,
        event: { name: body.event, data: body.data ? { ...changes.set, ...changes.oneShot } : null },
      },
      'track',
    );
    await deps.eventTriggers.afterEventsRecorded(ctx.state.project!.id, result.events);
    const tracked = result.events.find((e) => e.id === result.trackedEventId)!;
    ctx.body = { success: true, data: { contact: result.contact.id, event: tracked.id, timestamp: tracked.createdAt.toISOString() } };
  };

  router.options('/v1/track', publicCors);
  router.post('/v1/track', publicCors, ...keyAuthenticated('public', deps), once, track);
  router.post('/events/track', ...keyAuthenticated('secret', deps), once, track);
  return router;
}
