import { proxyActivities } from '@temporalio/workflow';
import type { DomainActivities } from '../activities/domainActivities';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { recheckDomains } = proxyActivities<DomainActivities>({
  // Well under the 5-minute interval: the schedule skips a run while the previous one is open.
  startToCloseTimeout: '4 minutes',
  heartbeatTimeout: '1 minute',
  retry: PERIODIC_ACTIVITY_RETRY,
});

/** Started every 5 minutes by the `<taskQueue>-domain-recheck` schedule. */
export async function domainRecheckWorkflow(): Promise<Awaited<ReturnType<DomainActivities['recheckDomains']>>> {
  return recheckDomains();
}
