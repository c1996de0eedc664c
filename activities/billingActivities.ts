import { ApplicationFailure } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { usageReportRepository } from '../db/billing/usageReportRepository';
import { createStripeClient, Stripe } from '../lib/stripe/stripeClient';

/** Reports planned per run; more wait for the next hour. */
const REPORTS_PER_RUN = 1000;
/** Stripe takes meter events up to 35 days old. */
const MAX_EVENT_AGE_SECONDS = 34 * 24 * 3600;

export function createBillingActivities({ config, orm, logger }: ActivityDeps) {
  // Temporal retries a failed report; the client itself does not (each attempt is one request).
  const stripe = config.stripe ? createStripeClient(config.stripe, { maxNetworkRetries: 0 }) : null;

  return {
    /** Writes the usage reports now owed and answers every unsent one; none with billing off. */
    async planBillingUsageReports(): Promise<string[]> {
      if (!stripe) return [];
      return usageReportRepository.plan(orm.em.fork(), REPORTS_PER_RUN);
    },

    /**
     * Sends one report as a Billing Meter event. Its id is the event's identifier and the
     * request's idempotency key, so a repeat (a retry after a timeout, a later run after an
     * outage) is the same event to Stripe. Stripe refusing the event (4xx other than 429) is not
     * retried in this run; 5xx, 429 and no answer are.
     */
    async reportBillingUsage(input: { reportId: string }): Promise<'reported' | 'already-reported' | 'missing'> {
      if (!stripe || !config.stripe) throw ApplicationFailure.nonRetryable('Billing is off (STRIPE_SECRET_KEY is not set)');
      const em = orm.em.fork();
      const report = await usageReportRepository.find(em, input.reportId);
      if (!report) return 'missing';
      if (report.reportedAt) return 'already-reported';
      // The event belongs to the month it counts: at the latest the month's last second.
      const monthEnd = Date.UTC(report.month.getUTCFullYear(), report.month.getUTCMonth() + 1, 1) / 1000 - 1;
      const now = Math.floor(Date.now() / 1000);
      const timestamp = Math.max(now - MAX_EVENT_AGE_SECONDS, Math.min(Math.floor(report.createdAt.getTime() / 1000), monthEnd));
      try {
        await stripe.billing.meterEvents.create(
          {
            event_name: config.stripe.meterEventName,
            identifier: report.id,
            timestamp,
            payload: { stripe_customer_id: report.stripeCustomerId, value: String(report.quantity) },
          },
          { idempotencyKey: `mailroom-usage-${report.id}` },
        );
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await usageReportRepository.markFailed(em, report.id, message);
        logger.warn({ reportId: report.id, projectId: report.projectId, err: message }, 'billing: a usage report to Stripe failed');
        const status = err instanceof Stripe.errors.StripeError ? err.statusCode : undefined;
        if (status && status >= 400 && status < 500 && status !== 429 && status !== 409) {
          throw ApplicationFailure.nonRetryable(`Stripe refused the usage report: ${message}`, 'StripeRefused');
        }
        throw err;
      }
      await usageReportRepository.markReported(em, report.id);
      return 'reported';
    },
  };
}
export type BillingActivities = ReturnType<typeof createBillingActivities>;
