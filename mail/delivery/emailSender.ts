import type { EmailAttachment, EmailRow, DeliveryOutcome } from '../../db/emails/emailRepository';
import { MailDeliveryError, type MailTransport, type OutgoingMail } from '../mailTransport';
import type { DkimSigningKey } from '../../db/domains/domainRepository';

/**
 * The one sender of recorded emails (transactional, campaign and workflow mail alike): turns an
 * email row into the mail the transport builds and signs with its domain's DKIM key, hands it over,
 * and says what happened in the terms delivery records: SENT, RETRY (a temporary failure: SMTP
 * 4xx, a connection problem, a timeout) or FAILED (a permanent refusal: SMTP 5xx).
 */
export async function sendRecordedEmail(
  transport: MailTransport,
  email: EmailRow,
  options: { dkim: DkimSigningKey | null; attachments: EmailAttachment[] },
): Promise<DeliveryOutcome> {
  const mail: OutgoingMail = {
    projectId: email.projectId,
    from: email.fromName ? { name: email.fromName, address: email.fromAddress } : email.fromAddress,
    to: [email.toName ? { name: email.toName, address: email.toAddress } : email.toAddress],
    replyTo: email.replyTo ?? undefined,
    subject: email.subject,
    html: email.html ?? undefined,
    text: email.text ?? undefined,
    headers: email.headers ?? undefined,
    messageId: email.messageId,
    attachments: options.attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType ?? undefined,
      cid: a.contentId ?? undefined,
      contentDisposition: a.disposition,
    })),
    // The builder signs its list of fields (mail/mime/dkimSignature.ts), List-Unsubscribe-Post included.
    dkim: options.dkim ?? undefined,
  };
  try {
    const sent = await transport.send(mail);
    return { emailId: email.id, status: 'SENT', providerMessageId: providerMessageId(sent.response) };
  } catch (err) {
    if (err instanceof MailDeliveryError && err.permanent) return { emailId: email.id, status: 'FAILED', error: err.message.slice(0, 1000) };
    return { emailId: email.id, status: 'RETRY', error: (err as Error).message?.slice(0, 1000) ?? 'delivery failed' };
  }
}

/**
 * The id the relay gave the message, from its final reply: Amazon SES answers
 * `250 Ok <ses-message-id>`, and its notifications name the mail by that id.
 */
export function providerMessageId(response: string): string | null {
  const ses = /^250 Ok ([0-9a-f]{16,}-[0-9a-f-]+)$/i.exec(response.trim());
  if (ses) return ses[1];
  const queued = /queued as ([A-Za-z0-9._-]+)/i.exec(response);
  return queued ? queued[1] : null;
}
