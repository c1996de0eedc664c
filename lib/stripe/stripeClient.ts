import Stripe from 'stripe';
import type { StripeSettings } from '../config';

/**
 * The official Stripe client, pointed at STRIPE_API_URL when set (tests use a local server that
 * answers the routes Mailroom calls). `maxNetworkRetries` 0 leaves retrying to the caller (the
 * usage report's Temporal activity); requests that create things carry idempotency keys either way.
 */
export function createStripeClient(settings: StripeSettings, options: { maxNetworkRetries?: number } = {}): Stripe {
  return new Stripe(settings.secretKey, {
    maxNetworkRetries: options.maxNetworkRetries ?? 1,
    timeout: 20_000,
    appInfo: { name: 'Mailroom' },
    ...(settings.api ?? {}),
  });
}

export { Stripe };
