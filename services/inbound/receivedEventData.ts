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

/**
 * Lines longer than this are paragraph text to the reply parser, never an attribution ("On …
 * wrote:"), a signature or a separator: it is given a short stand-in for each, and the line is
 * put back in its answer. email-reply-parser reverses every line character by character and
 * tries some fifty patterns on it, so its cost grows with each line's length: a paragraph written
 * as one line (common in mail written without wrapping) made it, with the garbage its reversals
 * leave, the largest share of the worker's CPU in processing received mail, and anyone can send
 * a line as long as the text part allows (the measurement: docs/decisions.md, "Mail in", `replyText`
 * of very long lines; its effect on processing: docs/benchmarks.md, `bench:inbound`).
 */
const PARSED_LINE_MAX_CHARS = 1000;
/** A stand-in is private-use characters around the line's index: no pattern of the parser matches it. */
const STAND_IN = /\uE000(\d+)\uE001/g;

/** The reply alone: the text without its quoted history and signature. */
export function replyText(text: string | null): string | null {
  if (!text) return null;
  const longLines: string[] = [];
  // Text that holds the stand-ins' own characters is parsed as it is (slower, never wrong).
  const shortened = text.includes('\uE000')
    ? text
    : text.replace(/[^\r\n]+/g, (line) => {
        if (line.length <= PARSED_LINE_MAX_CHARS) return line;
        longLines.push(line.trimEnd());
        // A quoted line stays quoted (the parser calls a line starting with '>' quoted).
        return `${line.startsWith('>') ? '>' : ''}\uE000${longLines.length - 1}\uE001`;
      });
  try {
    const visible = new EmailReplyParser().read(shortened).getVisibleText().trim();
    return longLines.length ? visible.replace(STAND_IN, (_, i: string) => longLines[Number(i)]) : visible;
  } catch {
    return text;
  }
}

/** What an `email.received` event says of the message, the same for each of its copies: worked out once per message. */
export interface ReceivedMessageData {
  subject: string;
  /** Null when the message had no Message-ID. */
  messageId: string | null;
  /** How many attachments it had. */
  attachments: number;
  /** The text part, at most EVENT_TEXT_MAX_BYTES. */
  text: string | null;
  replyText: string | null;
}

export function receivedMessageData(message: Pick<ReceivedMessage, 'subject' | 'messageId' | 'attachments' | 'text'>): ReceivedMessageData {
  const text = message.text === null ? null : truncateUtf8(message.text, EVENT_TEXT_MAX_BYTES);
  return { subject: message.subject, messageId: message.messageId || null, attachments: message.attachments.length, text, replyText: replyText(text) };
}

/** The data of the contact's `email.received` event, exactly as contract 20 lists it. */
export function receivedEventData(
  message: ReceivedMessageData,
  copy: { emailId: string; from: string; to: string; auth: InboundAuthResults },
): Record<string, unknown> {
  return {
    emailId: copy.emailId,
    from: copy.from,
    to: copy.to,
    subject: message.subject,
    messageId: message.messageId,
    spf: copy.auth.spf,
    dkim: copy.auth.dkim,
    dmarc: copy.auth.dmarc,
    attachments: message.attachments,
    text: message.text,
    mailboxHash: mailboxHash(copy.to),
    replyText: message.replyText,
  };
}
