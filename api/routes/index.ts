import type Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { sendRoutes } from './sendRoutes';
import { healthRoutes } from './healthRoutes';
import { configRoutes } from './configRoutes';
import { authRoutes } from './authRoutes';
import { userRoutes } from './userRoutes';
import { projectRoutes } from './projectRoutes';
import { outboxRoutes } from './outboxRoutes';
import { contactRoutes } from './contactRoutes';
import { contactJobRoutes } from './contactJobRoutes';
import { trackRoutes } from './eventTrackRoutes';
import { eventRoutes } from './eventRoutes';
import { domainRoutes } from './domainRoutes';
import { templateRoutes } from './templateRoutes';
import { campaignRoutes } from './campaignRoutes';
import { verifyRoutes } from './verifyRoutes';
import { trackingRoutes } from './emailTrackingRoutes';
import { subscriptionPages } from './subscriptionPages';
import { snsWebhookRoutes } from './snsWebhookRoutes';
import { segmentRoutes } from './segmentRoutes';
import { uploadRoutes } from './uploadRoutes';
import { workflowRoutes } from './workflowRoutes';
import { billingRoutes } from './billingRoutes';
import { stripeWebhookRoutes } from './stripeWebhookRoutes';
import { workflowExecutionRoutes } from './workflowExecutionRoutes';
import { activityRoutes } from './activityRoutes';
import { analyticsRoutes } from './analyticsRoutes';
import { emailRecordRoutes } from './emailRecordRoutes';
import { suppressionRoutes } from './suppressionRoutes';
import { dashboardRoutes } from './dashboardRoutes';
import { requestLogRoutes } from './requestLogRoutes';
import { webhookEndpointRoutes } from './webhookEndpointRoutes';

/**
 * Every router of the API, in the order they are mounted (order matters where two paths overlap).
 * The API description is built from the same list (api/openapi/apiDocument.ts).
 */
export function apiRouters(deps: ApiDeps): Router<AppState>[] {
  return [
    healthRoutes(deps),
    configRoutes(deps),
    authRoutes(deps),
    userRoutes(deps),
    projectRoutes(deps),
    outboxRoutes(deps),
    trackRoutes(deps),
    sendRoutes(deps),
    eventRoutes(deps),
    domainRoutes(deps),
    templateRoutes(deps),
    campaignRoutes(deps),
    verifyRoutes(deps),
    trackingRoutes(deps),
    subscriptionPages(deps),
    snsWebhookRoutes(deps),
    segmentRoutes(deps),
    // Before the workflow definition routes, whose /workflows/:id/... would otherwise claim these.
    workflowExecutionRoutes(deps),
    workflowRoutes(deps),
    billingRoutes(deps),
    stripeWebhookRoutes(deps),
    activityRoutes(deps),
    analyticsRoutes(deps),
    emailRecordRoutes(deps),
    suppressionRoutes(deps),
    // Before contactRoutes, whose /contacts/:id would otherwise claim /contacts/import.
    contactJobRoutes(deps),
    contactRoutes(deps),
    uploadRoutes(deps),
    requestLogRoutes(deps),
    webhookEndpointRoutes(deps),
    dashboardRoutes(),
  ];
}
