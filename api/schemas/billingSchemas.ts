import { z } from './zod';
import { freeFormObject, timestamp } from './responseFields';
import { USAGE_CATEGORIES, type UsageCategory } from '../../db/billing/billingUsageRepository';

/** The caps' body lives in shared/, where the dashboard's Settings form checks it too. */
export { limitsBody } from '../../shared/billingSchemas';

/** Where Stripe sends the user back; the dashboard's own pages, by default under PUBLIC_URL. */
const returnUrl = z
  .string()
  .max(2000)
  .url()
  .refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL');

export const checkoutBody = z.object({ successUrl: returnUrl.optional(), cancelUrl: returnUrl.optional() }).strict();

export const portalBody = z.object({ returnUrl: returnUrl.optional() }).strict();

export const invoicesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(10),
  startingAfter: z
    .string()
    .regex(/^in_[A-Za-z0-9]{1,200}$/, 'must be an invoice id (in_…)')
    .optional(),
});

// ---------------------------------------------------------------------------------------------
// Responses

/** One category's cap and the calendar month's use of it. */
export const categoryLimitResponse = z
  .object({
    limit: z.number().int().nullable().describe('Emails per calendar month; null for no cap'),
    usage: z.number().int().describe('Emails counted this month (UTC)'),
    percentage: z.number().describe('usage / limit in percent, one decimal; 0 without a cap; above 100 when a cap was lowered below the month’s use'),
    isWarning: z.boolean().describe('From 80 % of the cap on'),
    isBlocked: z.boolean().describe('The cap is reached: sends of this category are refused'),
  })
  .strict()
  .openapi('BillingCategoryLimit');

const byCategory = <T extends z.ZodTypeAny>(schema: T) =>
  z.object(Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, schema])) as Record<UsageCategory, T>).strict();

/** GET and PUT …/billing-limits: every category's cap and use. */
export const billingLimitsResponse = byCategory(categoryLimitResponse).openapi('BillingLimits');

/** Checkout and portal: the Stripe page to send the user to. */
export const stripeRedirectResponse = z.object({ url: z.string().url() }).strict();

export const consumptionResponse = z
  .object({
    periodStart: timestamp,
    periodEnd: timestamp,
    emails: z.number().int().describe('Every category together'),
    byCategory: byCategory(z.number().int()),
  })
  .strict();

export const invoicesResponse = z
  .object({
    data: z.array(freeFormObject.describe('A Stripe Invoice object, as Stripe answers it')),
    hasMore: z.boolean().describe('More invoices follow: ask again with `startingAfter` set to the last one’s id'),
  })
  .strict();

/**
 * POST /webhooks/incoming/stripe: a Stripe event, signed in the Stripe-Signature header over the
 * exact bytes. The handler reads those bytes itself; this is what a verified body must hold.
 */
export const stripeEventBody = z
  .object({
    id: z.string(),
    type: z
      .string()
      .describe('checkout.session.completed, customer.subscription.created/updated/deleted, invoice.payment_failed/paid/payment_succeeded are acted on'),
    created: z.number().describe('Seconds since the epoch'),
    data: z.object({ object: freeFormObject }),
  })
  .openapi('StripeEvent');

export const stripeWebhookResponse = z
  .object({
    received: z.literal(true),
    outcome: z
      .enum(['applied', 'duplicate', 'stale', 'unknown-customer', 'ignored'])
      .describe(
        'applied; duplicate (this event id was seen before); stale (an older event than the last applied); unknown-customer; ignored (a type not acted on)',
      ),
  })
  .strict();
