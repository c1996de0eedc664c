import type { EmailAttachment, EmailRow, DeliveryOutcome } from '../../db/emails/emailRepository';
import { MailDeliveryError, type MailTransport, type OutgoingMail, type SentMail } from '../mailTransport';
import type { BuiltMessage } from '../mime/messageBuilder';
import type { DkimSigningKey } from '../../db/domains/domainRepository';
import { returnPathAddress } from './returnPath';

/** RETURN_PATH_SUBDOMAIN when INBOUND_MX_HOST is set (bounces come back by mail); else null. */
export type ReturnPathSubdomain = string | null;

/**
 * The one sender of recorded emails (transactional, campaign and workflow mail alike): turns an
 * email row into the mail the transport builds and signs with its domain's DKIM key, hands it over,
 * and says what happened in the terms delivery records: SENT, RETRY (a temporary failure: SMTP
 * 4xx, a connection problem, a timeout) or FAILED (a permanent refusal: SMTP 5xx).
 */
export async function sendRecordedEmail(
  transport: MailTransport,
  email: EmailRow,
  options: { dkim: DkimSigningKey | null; attachments: EmailAttachment[]; returnPathSubdomain: ReturnPathSubdomain },
): Promise<DeliveryOutcome> {
  return handedOver(email.id, () => transport.send(recordedEmailDelivery(email, options)));
}

/**
 * The mail `sendRecordedEmail` hands over for an email row, envelope sender included: what a
 * campaign wave builds (MailTransport.build) before it records the row.
 */
export function recordedEmailDelivery(
  email: EmailRow,
  options: { dkim: DkimSigningKey | null; attachments: EmailAttachment[]; returnPathSubdomain: ReturnPathSubdomain },
): OutgoingMail {
  const mail = recordedEmailMail(email, options);
  // The return path lives under the verified domain that signs (the one whose records list its
  // MX); mail sent without a domain key keeps its From address as the envelope sender.
  if (options.returnPathSubdomain && options.dkim) mail.envelopeFrom = returnPathAddress(email.id, options.returnPathSubdomain, options.dkim.domainName);
  return mail;
}

/** Hands over a message built before its email was recorded (a campaign wave's), in `sendRecordedEmail`'s terms. */
export function sendBuiltEmail(transport: MailTransport, emailId: string, mail: OutgoingMail, message: BuiltMessage): Promise<DeliveryOutcome> {
  return handedOver(emailId, () => transport.sendBuilt(mail, message));
}

async function handedOver(emailId: string, handOver: () => Promise<SentMail>): Promise<DeliveryOutcome> {
  try {
    const sent = await handOver();
    return { emailId, status: 'SENT', providerMessageId: providerMessageId(sent.response), stamp: sent.stamp };
  } catch (err) {
    if (err instanceof MailDeliveryError && err.permanent) return { emailId, status: 'FAILED', error: err.message.slice(0, 1000), stamp: err.stamp ?? null };
    return { emailId, status: 'RETRY', error: (err as Error).message?.slice(0, 1000) ?? 'delivery failed' };
  }
}

/**
 * The mail an email row stands for: what delivery hands to the transport, and what a sent
 * message is rebuilt from (services/sending/sentMessage.ts), so both read the row the same way.
 */
export function recordedEmailMail(email: EmailRow, options: { dkim: DkimSigningKey | null; attachments: EmailAttachment[] }): OutgoingMail {
  const { shownTo, cc, headers } = shownRecipients(email.headers);
  return {
    projectId: email.projectId,
    from: email.fromName ? { name: email.fromName, address: email.fromAddress } : email.fromAddress,
    to: [email.toName ? { name: email.toName, address: email.toAddress } : email.toAddress],
    ...(shownTo !== undefined ? { shownTo } : {}),
    ...(cc !== undefined ? { cc } : {}),
    replyTo: email.replyTo ?? undefined,
    subject: email.subject,
    html: email.html ?? undefined,
    text: email.text ?? undefined,
    headers,
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
}

/**
 * A relayed message's `To` and `Cc` as written travel in the row's headers (the SMTP relay puts
 * them there; /v1/send refuses those names as custom headers): taken out here to be shown as the
 * message's To and Cc fields, which the builder writes itself.
 */
function shownRecipients(rowHeaders: Record<string, string> | null): { shownTo?: string; cc?: string; headers?: Record<string, string> } {
  if (!rowHeaders) return {};
  let shownTo: string | undefined;
  let cc: string | undefined;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(rowHeaders)) {
    const lower = name.toLowerCase();
    if (lower === 'to') shownTo = value;
    else if (lower === 'cc') cc = value;
    else headers[name] = value;
  }
  return { shownTo, cc, headers };
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
