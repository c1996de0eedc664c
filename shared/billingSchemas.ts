import { z } from 'zod';

/**
 * The monthly caps' request body (contract 17), as the API parses it (api/schemas/billingSchemas.ts
 * re-exports it) and the dashboard's Settings form checks it.
 */

/** The categories emails are counted and capped in, per calendar month (UTC). */
export const USAGE_CATEGORIES = ['transactional', 'campaigns', 'workflows', 'inbound'] as const;
export type UsageCategory = (typeof USAGE_CATEGORIES)[number];

/** A cap: a positive whole number of emails per calendar month, or null for none. */
export const monthlyCap = z
  .number({ invalid_type_error: 'must be a positive whole number or null', required_error: 'is required (null for no cap)' })
  .int('must be a whole number')
  .min(1, 'must be at least 1 (null for no cap)')
  .max(2_147_483_647)
  .nullable();

/** PUT /users/@me/projects/:id/billing-limits: every category's cap. */
export const limitsBody = z.object(Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, monthlyCap])) as Record<UsageCategory, typeof monthlyCap>).strict();
