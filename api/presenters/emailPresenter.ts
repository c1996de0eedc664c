import type { z } from 'zod';
import type { EmailRow } from '../../db/emails/emailRepository';
import type { emailDetailResponse, emailResponse } from '../schemas/emailRecordSchemas';
import type { EmailEvent } from '../../db/emails/emailRecordRepository';
import type { EmailContent } from '../../services/emails/emailViews';

/** The email record of contract section 9. */
export function serializeEmail(email: EmailRow): z.input<typeof emailResponse> {
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
    // A received email's verdicts (contract 20); sent mail has none.
    ...(email.source === 'INBOUND' ? { auth: email.auth ?? null } : {}),
  };
}

/** GET /emails/:id (contracts 20, 21): the record, its parts (and a received email's content) and its own events, oldest first. */
export function serializeEmailWithEvents(email: EmailRow, events: EmailEvent[], content: EmailContent): z.input<typeof emailDetailResponse> {
  return { ...serializeEmail(email), ...content, events: events.map((e) => ({ name: e.name, createdAt: e.createdAt, data: e.data })) };
}
