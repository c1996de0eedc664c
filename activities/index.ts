import type { ActivityDeps } from './deps';
import { createAccountEmailActivities } from './accountEmailActivities';
import { createCleanupActivities } from './cleanupActivities';
import { createContactJobActivities } from './contactJobActivities';
import { createDomainActivities } from './domainActivities';
import { createEmailDeliveryActivities } from './emailDeliveryActivities';
import { createCampaignActivities } from './campaignActivities';
import { createSegmentActivities } from './segmentActivities';
import { createBillingActivities } from './billingActivities';
import { createAutomationExecutionActivities } from './automationExecutionActivities';
import { createAutomationExecutionSweepActivities } from './automationExecutionSweepActivities';
import { createInboundActivities } from './inboundActivities';
import { createWebhookDeliveryActivities } from './webhookDeliveryActivities';

/** Every activity the worker registers, bound to the worker's services. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createAccountEmailActivities(deps),
    ...createCleanupActivities(deps),
    ...createContactJobActivities(deps),
    ...createDomainActivities(deps),
    ...createEmailDeliveryActivities(deps),
    ...createCampaignActivities(deps),
    ...createSegmentActivities(deps),
    ...createBillingActivities(deps),
    ...createAutomationExecutionActivities(deps),
    ...createAutomationExecutionSweepActivities(deps),
    ...createInboundActivities(deps),
    ...createWebhookDeliveryActivities(deps),
  };
}
export type { ActivityDeps };
