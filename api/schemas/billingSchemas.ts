import { z } from 'zod';
import { USAGE_CATEGORIES, type UsageCategory } from '../../db/billing/billingUsageRepository';

/** A cap: a positive whole number of emails per calendar month, or null for none. */
const cap = z
  .number({ invalid_type_error: 'must be a positive whole number or null', required_error: 'is required (null for no cap)' })
  .int('must be a whole number')
  .min(1, 'must be at least 1 (null for no cap)')
  .max(2_147_483_647)
  .nullable();

export const limitsBody = z.object(Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, cap])) as Record<UsageCategory, typeof cap>).strict();

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
