/**
 * The ids of delivery and campaign workflows (contract 14), on their own: they import nothing, so
 * any layer (the delivery sweep's grouping, the workflows, the start options) can name them.
 */
/** The campaign's one workflow (contract section 14): a retried start never runs it twice; it delivers the campaign's emails itself. */
export const campaignWorkflowId = (campaignId: string): string => `campaign-${campaignId}`;

/** The delivery workflow ids (contract 14). */
export const deliveryWorkflowIds = {
  /** One email's own delivery: `send-<emailId>`. */
  single: (emailId: string): string => `send-${emailId}`,
  /** A batch's delivery, named after its first email: `deliver-<first emailId>`. */
  batch: (emailIds: string[]): string => `deliver-${emailIds[0]}`,
  /**
   * An automation execution's retries (the mail its SEND_EMAIL steps, in one activity, could not
   * hand over yet): `send-<first emailId>` however many emails it carries, the id the first
   * email's step recorded for the delivery sweep. Not `batch`'s `deliver-`: recorded runs started
   * their retries under this id, and a changed id would no longer replay.
   */
  executionRetries: (emailIds: string[]): string => deliveryWorkflowIds.single(emailIds[0]),
  /** `send-<emailId>` for one email, `deliver-<first emailId>` for more (what /v1/send schedules). */
  forEmails: (emailIds: string[]): string => (emailIds.length === 1 ? deliveryWorkflowIds.single(emailIds[0]) : deliveryWorkflowIds.batch(emailIds)),
};
