import { proxyActivities } from '@temporalio/workflow';
import type { BillingActivities } from '../activities/billingActivities';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { planBillingUsageReports } = proxyActivities<BillingActivities>({
  startToCloseTimeout: '2 minutes',
  retry: PERIODIC_ACTIVITY_RETRY,
});

const { reportBillingUsage } = proxyActivities<BillingActivities>({
  startToCloseTimeout: '1 minute',
  // About three minutes of retries within a run; a longer outage leaves the report for the next hour.
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 },
});

export interface BillingUsageReportResult {
  planned: number;
  reported: number;
  /** Reports left for the next run (Stripe unreachable or refusing). */
  left: number;
}

/**
 * Started every hour by the `<taskQueue>-billing-usage-report` schedule: reports each project's
 * email usage to Stripe as Billing Meter events. The reports are written to the database before
 * they are sent and sent under their own ids as idempotency keys, so a Stripe outage delays
 * reporting and loses nothing: the first report that still fails after its retries ends the
 * run (Stripe is most likely down for the rest too), and the next run starts with it.
 */
export async function billingUsageReportWorkflow(): Promise<BillingUsageReportResult> {
  const reportIds = await planBillingUsageReports();
  let reported = 0;
  for (const reportId of reportIds) {
    try {
      await reportBillingUsage({ reportId });
      reported++;
    } catch {
      break;
    }
  }
  return { planned: reportIds.length, reported, left: reportIds.length - reported };
}
