import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { ApiError } from '../../lib/errors';
import { readDecodedBody } from '../http/bodyDecoding';
import { billingAccountRepository, type StripeEventOutcome, type SubscriptionState } from '../../db/billing/billingAccountRepository';
import { createStripeClient, Stripe } from '../../lib/stripe/stripeClient';
import { stripeEventBody, stripeWebhookResponse } from '../schemas/billingSchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** The route jsonBody leaves unread: the signature covers the exact bytes Stripe sent. */
export const STRIPE_WEBHOOK_PATH = '/webhooks/incoming/stripe';

/** Stripe's events are far smaller; this only bounds what an unauthenticated caller can make us read. */
const STRIPE_BODY_LIMIT_BYTES = 512 * 1024;

const idOf = (value: string | { id: string } | null | undefined) => (typeof value === 'string' ? value : (value?.id ?? null));
const fromEpoch = (seconds: number | null | undefined) => (typeof seconds === 'number' ? new Date(seconds * 1000) : null);

/** A subscription's state; the period lives on its items in current API versions, on the subscription in older ones. */
function subscriptionState(subscription: Stripe.Subscription): SubscriptionState {
  const item = subscription.items?.data?.[0] as (Stripe.SubscriptionItem & { current_period_start?: number; current_period_end?: number }) | undefined;
  const legacy = subscription as unknown as { current_period_start?: number; current_period_end?: number };
  return {
    subscriptionId: subscription.id,
    status: subscription.status,
    currentPeriodStart: fromEpoch(item?.current_period_start ?? legacy.current_period_start),
    currentPeriodEnd: fromEpoch(item?.current_period_end ?? legacy.current_period_end),
  };
}

/**
 * `POST /webhooks/incoming/stripe` (contract 17), only with billing on. The `Stripe-Signature`
 * header is checked against STRIPE_WEBHOOK_SECRET by the stripe package over the raw body
 * (5 minutes' tolerance); a forged or stale one answers 400 and changes nothing. Applied: a
 * completed checkout (links the customer), subscription created/updated/deleted, a failed
 * payment (disables the project, PAYMENT_FAILED) and a paid invoice (enables it again). Other
 * events are acknowledged and ignored. A replayed event answers 200 and changes nothing.
 */
export function stripeWebhookRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Provider callbacks', access: 'none' });
  const settings = deps.config.stripe;
  if (!settings) return router;
  const stripe = createStripeClient(settings);

  route.post(
    STRIPE_WEBHOOK_PATH,
    {
      summary: 'Receive a Stripe event',
      description:
        'For Stripe only, with billing on (otherwise 404). The `Stripe-Signature` header must verify over the exact body with STRIPE_WEBHOOK_SECRET ' +
        '(5 minutes’ tolerance): a missing, forged or stale one answers 400 INVALID_SIGNATURE and changes nothing. ' +
        'A completed checkout links the customer; subscription events set the subscription; a failed payment disables the project (PAYMENT_FAILED) and a paid invoice enables it again. ' +
        'Other event types are acknowledged and ignored; an event delivered again answers 200 and changes nothing.',
      body: { schema: stripeEventBody },
      responses: { 200: { description: 'The event was taken (whatever its outcome): Stripe does not send it again', schema: stripeWebhookResponse } },
    },
    async (ctx) => {
      const signature = ctx.get('Stripe-Signature');
      if (!signature) throw new ApiError(400, 'INVALID_SIGNATURE', 'The Stripe-Signature header is missing');
      const raw = await readDecodedBody(ctx.req, STRIPE_BODY_LIMIT_BYTES);
      let event: Stripe.Event;
      try {
        event = await stripe.webhooks.constructEventAsync(raw, signature, settings.webhookSecret);
      } catch (err) {
        const reason = err instanceof Stripe.errors.StripeSignatureVerificationError ? err.message : 'the body is not a Stripe event';
        deps.logger.warn({ reason }, 'stripe: refused a webhook whose signature does not verify');
        throw new ApiError(400, 'INVALID_SIGNATURE', `Stripe signature verification failed: ${reason}`.slice(0, 500));
      }
      if (!stripeEventBody.safeParse(event).success) throw new ApiError(400, 'BAD_REQUEST', 'The body is not a Stripe event');
      const outcome = await applyStripeEvent(ctx.state.em, event);
      deps.logger.info({ eventId: event.id, type: event.type, outcome }, 'stripe: webhook');
      ctx.body = { received: true, outcome } satisfies z.input<typeof stripeWebhookResponse>;
    },
  );
  return router;
}

/** One event's effect, in one transaction with the record of its id. */
async function applyStripeEvent(em: import('@mikro-orm/postgresql').EntityManager, event: Stripe.Event): Promise<StripeEventOutcome> {
  return em.transactional(async (tx) => {
    if (!(await billingAccountRepository.recordEvent(tx, event.id, event.type))) return 'duplicate';
    const at = new Date(event.created * 1000);
    let projectId: string | null;
    let applied: boolean;
    switch (event.type) {
      case 'checkout.session.completed': {
        const session = event.data.object;
        projectId = await billingAccountRepository.projectOf(tx, idOf(session.customer), session.client_reference_id ?? session.metadata?.projectId);
        applied = projectId !== null;
        break;
      }
      case 'customer.subscription.created':
      case 'customer.subscription.updated':
      case 'customer.subscription.deleted': {
        const subscription = event.data.object;
        projectId = await billingAccountRepository.projectOf(tx, idOf(subscription.customer), subscription.metadata?.projectId);
        applied = projectId !== null && (await billingAccountRepository.applySubscription(tx, projectId, subscriptionState(subscription), at));
        break;
      }
      case 'invoice.payment_failed':
      case 'invoice.paid':
      case 'invoice.payment_succeeded': {
        const invoice = event.data.object;
        projectId = await billingAccountRepository.projectOf(tx, idOf(invoice.customer));
        applied = projectId !== null && (await billingAccountRepository.applyPayment(tx, projectId, event.type !== 'invoice.payment_failed', at));
        break;
      }
      default:
        return 'ignored';
    }
    if (!projectId) return 'unknown-customer';
    await billingAccountRepository.noteEventProject(tx, event.id, projectId);
    return applied ? 'applied' : 'stale';
  });
}
