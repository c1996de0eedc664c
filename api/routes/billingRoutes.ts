import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { ApiError, conflict } from '../../lib/errors';
import { parseBody, parseQuery } from '../http/validation';
import { requireUser } from '../auth/session';
import { requireProjectRole } from '../auth/projectAccess';
import { billingUsageRepository, USAGE_CATEGORIES, type CategoryUsage } from '../../db/billing/billingUsageRepository';
import { ACTIVE_SUBSCRIPTION_STATUSES, billingAccountRepository } from '../../db/billing/billingAccountRepository';
import { createStripeClient, Stripe } from '../../lib/stripe/stripeClient';
import {
  billingLimitsResponse,
  checkoutBody,
  consumptionResponse,
  invoicesQuery,
  invoicesResponse,
  limitsBody,
  portalBody,
  stripeRedirectResponse,
} from '../schemas/billingSchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** A category's line of GET billing-limits (contract 17). */
export function categoryReport({ limit, usage }: CategoryUsage) {
  // Unlimited: 0 %, never warned or blocked. Above 100 % happens when a cap is lowered below the month's usage.
  const percentage = limit === null ? 0 : Math.round((usage / limit) * 1000) / 10;
  // Warned from exactly 80 % on (compared unrounded: 79.96 % is not yet a warning).
  return { limit, usage, percentage, isWarning: limit !== null && usage * 5 >= limit * 4, isBlocked: limit !== null && usage >= limit };
}

/**
 * The billing endpoints of the dashboard (contract 17). The monthly caps (`billing-limits`) work
 * whether billing is on or off; checkout, portal, consumption and invoices exist only with
 * STRIPE_SECRET_KEY set, and answer 404 like any unknown route otherwise.
 */
export function billingRoutes(deps: ApiDeps) {
  const { config } = deps;
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Billing', access: 'session' });
  const session = requireUser(config);
  const base = '/users/@me/projects/:id';

  async function limitsReport(ctx: AppContext, projectId: string): Promise<z.input<typeof billingLimitsResponse>> {
    const all = await billingUsageRepository.all(ctx.state.em, projectId);
    return Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, categoryReport(all[c])])) as z.input<typeof billingLimitsResponse>;
  }

  route.get(
    `${base}/billing-limits`,
    {
      summary: 'Get the monthly caps',
      description: 'Each category’s cap (emails per calendar month, UTC) and this month’s use. Any member of the project.',
      responses: { 200: { description: 'The caps and their use', schema: billingLimitsResponse } },
    },
    session,
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id);
      ctx.body = await limitsReport(ctx, project.id);
    },
  );

  route.put(
    `${base}/billing-limits`,
    {
      summary: 'Set the monthly caps',
      description:
        'Every category, each a positive whole number of emails per calendar month or null for no cap; a send that would pass its cap is refused (BILLING_LIMIT_EXCEEDED). ' +
        'Owners and admins. Works whether Stripe billing is on or off.',
      body: { schema: limitsBody, example: { transactional: 10000, campaigns: 50000, workflows: null, inbound: null } },
      responses: { 200: { description: 'The caps as set, and their use', schema: billingLimitsResponse } },
    },
    session,
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const limits = parseBody(limitsBody, ctx.request.body);
      await billingUsageRepository.setLimits(ctx.state.em, project.id, limits);
      // This process's sends read the new caps at once (others within a second; see CapUsageLookup).
      deps.capUsage.forget(project.id);
      ctx.body = await limitsReport(ctx, project.id);
    },
  );

  const settings = config.stripe;
  if (!settings) return router;
  const stripe = createStripeClient(settings);

  /** Stripe answering with an error, or not at all: 502, nothing changed on our side. */
  async function callStripe<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof Stripe.errors.StripeError)) throw err;
      deps.logger.warn({ err: { type: err.type, code: err.code, statusCode: err.statusCode, message: err.message }, what }, 'stripe: a request failed');
      throw new ApiError(502, 'PAYMENT_PROVIDER_ERROR', `Stripe could not ${what}: ${err.message}`.slice(0, 500), {
        details: { stripeType: err.type, stripeCode: err.code ?? null, stripeStatus: err.statusCode ?? null },
      });
    }
  }

  const STRIPE_ONLY =
    'Only with Stripe billing on (STRIPE_SECRET_KEY); otherwise 404 like any unknown route. Stripe failing answers 502 PAYMENT_PROVIDER_ERROR.';

  route.post(
    `${base}/checkout`,
    {
      summary: 'Start a subscription checkout',
      description:
        'Creates the project’s Stripe customer when it has none and a subscription checkout session; send the user to its `url`. ' +
        'A project already subscribed answers 409 (use the billing portal). Owners and admins. ' +
        STRIPE_ONLY,
      body: { schema: checkoutBody, required: false },
      responses: { 200: { description: 'The Stripe Checkout page', schema: stripeRedirectResponse } },
    },
    session,
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const body = parseBody(checkoutBody, ctx.request.body);
      let account = await billingAccountRepository.find(ctx.state.em, project.id);
      if (account?.subscriptionStatus && (ACTIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(account.subscriptionStatus)) {
        throw conflict('This project already has a subscription; change it in the billing portal (POST …/billing-portal)', {
          subscriptionStatus: account.subscriptionStatus,
        });
      }
      if (!account) {
        // One customer per project, even for two checkouts at once: Stripe answers a repeated
        // idempotency key with the first customer, and the first link is kept.
        const customer = await callStripe('create the customer', () =>
          stripe.customers.create(
            { name: project.name, email: ctx.state.user!.email, metadata: { projectId: project.id } },
            { idempotencyKey: `mailroom-customer-${project.id}` },
          ),
        );
        account = await billingAccountRepository.link(ctx.state.em, project.id, customer.id);
      }
      const checkout = await callStripe('start a checkout', () =>
        stripe.checkout.sessions.create({
          mode: 'subscription',
          customer: account.stripeCustomerId,
          client_reference_id: project.id,
          line_items: [{ price: settings.priceId }],
          success_url: body.successUrl ?? `${config.publicUrl}/billing?checkout=success`,
          cancel_url: body.cancelUrl ?? `${config.publicUrl}/billing?checkout=cancelled`,
          metadata: { projectId: project.id },
          subscription_data: { metadata: { projectId: project.id } },
        }),
      );
      if (!checkout.url) throw new ApiError(502, 'PAYMENT_PROVIDER_ERROR', 'Stripe created a checkout session without a URL');
      ctx.body = { url: checkout.url } satisfies z.input<typeof stripeRedirectResponse>;
    },
  );

  route.post(
    `${base}/billing-portal`,
    {
      summary: 'Open the billing portal',
      description: 'A Stripe billing portal session for the project’s customer (409 before a first checkout). Owners and admins. ' + STRIPE_ONLY,
      body: { schema: portalBody, required: false },
      responses: { 200: { description: 'The Stripe billing portal page', schema: stripeRedirectResponse } },
    },
    session,
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const body = parseBody(portalBody, ctx.request.body);
      const account = await billingAccountRepository.find(ctx.state.em, project.id);
      if (!account) throw conflict('This project has no billing account yet; start with POST …/checkout');
      const portal = await callStripe('open the billing portal', () =>
        stripe.billingPortal.sessions.create({ customer: account.stripeCustomerId, return_url: body.returnUrl ?? `${config.publicUrl}/billing` }),
      );
      ctx.body = { url: portal.url } satisfies z.input<typeof stripeRedirectResponse>;
    },
  );

  route.get(
    `${base}/billing-consumption`,
    {
      summary: 'Get this month’s consumption',
      description: 'Emails counted this calendar month (UTC), in all and by category. Any member of the project. ' + STRIPE_ONLY,
      responses: { 200: { description: 'The month’s use', schema: consumptionResponse } },
    },
    session,
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id);
      const { periodStart, periodEnd, byCategory } = await billingUsageRepository.monthTotals(ctx.state.em, project.id);
      ctx.body = { periodStart, periodEnd, emails: Object.values(byCategory).reduce((a, b) => a + b, 0), byCategory } satisfies z.input<
        typeof consumptionResponse
      >;
    },
  );

  route.get(
    `${base}/billing-invoices`,
    {
      summary: 'List invoices',
      description: 'The project’s Stripe invoices, newest first, as Stripe answers them; none before a first checkout. Owners and admins. ' + STRIPE_ONLY,
      query: invoicesQuery,
      responses: { 200: { description: 'A page of invoices', schema: invoicesResponse } },
    },
    session,
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const query = parseQuery(invoicesQuery, ctx.query);
      const account = await billingAccountRepository.find(ctx.state.em, project.id);
      if (!account) {
        ctx.body = { data: [], hasMore: false } satisfies z.input<typeof invoicesResponse>;
        return;
      }
      const invoices = await callStripe('list the invoices', () =>
        stripe.invoices.list({
          customer: account.stripeCustomerId,
          limit: query.limit,
          ...(query.startingAfter ? { starting_after: query.startingAfter } : {}),
        }),
      );
      ctx.body = { data: invoices.data as unknown as Array<Record<string, unknown>>, hasMore: invoices.has_more } satisfies z.input<typeof invoicesResponse>;
    },
  );

  return router;
}
