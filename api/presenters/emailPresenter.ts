import type { EmailRow } from '../../db/emails/emailRepository';

/** The email record of contract section 9. */
export function serializeEmail(email: EmailRow) {
  return {
    id: email.id,
    projectId: email.projectId,
    contactId: email.contactId,
    templateId: email.templateId,
    campaignId: email.campaignId ?? null,
    workflowExecutionId: email.workflowExecutionId ?? null,
    source: email.source,
    subject: email.subject,
    from: email.fromAddress,
    to: email.toAddress,
    status: email.status,
    messageId: email.messageId,
    error: email.error,
    sentAt: email.sentAt,
    deliveredAt: email.deliveredAt,
    openedAt: email.openedAt,
    clickedAt: email.clickedAt,
    bouncedAt: email.bouncedAt,
    opens: email.opens,
    clicks: email.clicks,
    createdAt: email.createdAt,
  };
}
