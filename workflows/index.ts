/** Every workflow the worker runs. Only deterministic orchestration lives under workflows/. */
export { accountEmailRequestWorkflow, accountEmailWorkflow } from './accountEmailWorkflow';
export { hourlyCleanupWorkflow } from './hourlyCleanupWorkflow';
export { importContactsWorkflow, bulkContactsWorkflow } from './contactJobWorkflows';
export { domainRecheckWorkflow } from './domainRecheckWorkflow';
export { emailDeliveryWorkflow } from './emailDeliveryWorkflow';
export { emailDeliverySweepWorkflow } from './emailDeliverySweepWorkflow';
export { campaignSendWorkflow } from './campaignSendWorkflow';
export { trackedSegmentsRecomputeWorkflow } from './trackedSegmentsRecomputeWorkflow';
export { billingUsageReportWorkflow } from './billingUsageReportWorkflow';
export { workflowExecutionWorkflow } from './workflowExecutionWorkflow';
export { workflowExecutionSweepWorkflow } from './workflowExecutionSweepWorkflow';
export { inboundMessagesWorkflow } from './inboundMessagesWorkflow';
export { inboundSweepWorkflow } from './inboundSweepWorkflow';
export { webhookDeliveryWorkflow } from './webhookDeliveryWorkflow';
