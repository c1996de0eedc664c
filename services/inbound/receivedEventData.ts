import EmailReplyParser from 'email-reply-parser';
import type { InboundAuthResults } from '../../db/emails/emailRepository';
import type { ReceivedMessage } from './receivedMessage';

/** The text part an `email.received` event carries at most (contract 20). */
export const EVENT_TEXT_MAX_BYTES = 64 * 1024;

/** `support+t-42@example.com` → `t-42`; null without a `+`. */
export function mailboxHash(recipient: string): string | null {
  const local = recipient.slice(0, recipient.lastIndexOf('@'));
  const plus = local.indexOf('+');
  return plus < 0 || plus === local.length - 1 ? null : local.slice(plus + 1);
}

/** At most `maxBytes` of UTF-8, never cutting a character in two. */
function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  return Buffer.from(text)
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

/** The reply alone: the text without its quoted history and signature. */
function replyText(text: string | null): string | null {
  if (!text) return null;
  try {
    return new EmailReplyParser().read(text).getVisibleText().trim();
  } catch {
    return text;
  }
}

/** The data of the contact's `email.received` event, exactly as contract 20 lists it. */
export function receivedEventData(
  message: ReceivedMessage,
  copy: { emailId: string; from: string; to: string; auth: InboundAuthResults },
): Record<string, unknown> {
  const text = message.text === null ? null : truncateUtf8(message.text, EVENT_TEXT_MAX_BYTES);
  return {
    emailId: copy.emailId,
    from: copy.from,
    to: copy.to,
    subject: message.subject,
    messageId: message.messageId || null,
    spf: copy.auth.spf,
    dkim: copy.auth.dkim,
    dmarc: copy.auth.dmarc,
    attachments: message.attachments.length,
    text,
    mailboxHash: mailboxHash(copy.to),
    replyText: replyText(text),
  };
}
