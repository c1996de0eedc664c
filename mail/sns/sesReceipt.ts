/**
 * An Amazon SES receipt notification (`notificationType: "Received"`): SES received a message for
 * one of the project's domains and its receipt rule's SNS action published it with the content
 * inline (contract 20). SNS messages are at most 256 KB, so SES only publishes messages up to
 * 150 KB this way; larger ones, and rules that store to S3, carry no content.
 */
export interface SesReceipt {
  /** The message as SES received it (RFC 5322 bytes). */
  raw: Buffer;
  /** The envelope sender (SMTP MAIL FROM); empty for the null sender. */
  mailFrom: string;
  /** The recipients the receipt rule matched (the project's addresses), not every To/Cc. */
  recipients: string[];
  /** SES's id of the received message: one message however many times SNS delivers the notice. */
  sesMessageId: string;
  /** SES's verdicts, lower-cased (`pass`, `fail`, `gray`, `processing_failed`), when it gave them. */
  verdicts: { spf?: string; dkim?: string; dmarc?: string; spam?: string; virus?: string };
}

/** A "Received" notification that cannot be taken: malformed, or without its content inline. */
export class SesReceiptError extends Error {
  constructor(
    message: string,
    /** True when the notice is well-formed but carries no content (an S3 action, a message over 150 KB). */
    readonly withoutContent = false,
  ) {
    super(message);
  }
}

const obj = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const verdict = (value: unknown) => {
  const status = obj(value).status;
  return typeof status === 'string' && status ? status.toLowerCase() : undefined;
};
const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}\s*$/;

/**
 * Null when `message` is not an SES receipt notification (delivery feedback, another publisher);
 * the receipt when it is one with its content inline; throws SesReceiptError otherwise.
 */
export function parseSesReceipt(message: string): SesReceipt | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return null;
  }
  const body = obj(parsed);
  if (body.notificationType !== 'Received') return null;
  const mail = obj(body.mail);
  const receipt = obj(body.receipt);
  const action = obj(receipt.action);
  const recipients = receipt.recipients;
  if (!Array.isArray(recipients) || !recipients.length || !recipients.every((r) => typeof r === 'string' && r.includes('@')))
    throw new SesReceiptError('receipt.recipients must list the addresses the message was received for');
  if (typeof mail.messageId !== 'string' || !mail.messageId) throw new SesReceiptError('mail.messageId is missing');
  if (mail.source !== undefined && typeof mail.source !== 'string') throw new SesReceiptError('mail.source must be a string');
  if (body.content === undefined)
    throw new SesReceiptError(
      `the notification carries no content (receipt action ${typeof action.type === 'string' ? action.type : 'unknown'}): use an SNS action, which publishes messages up to 150 KB inline`,
      true,
    );
  if (typeof body.content !== 'string' || !body.content) throw new SesReceiptError('content must be the message as a string');
  const encoding = typeof action.encoding === 'string' ? action.encoding.toUpperCase() : 'UTF8';
  if (encoding !== 'UTF8' && encoding !== 'BASE64') throw new SesReceiptError(`receipt.action.encoding ${encoding} is neither UTF8 nor BASE64`);
  if (encoding === 'BASE64' && !BASE64.test(body.content)) throw new SesReceiptError('content is not base64 although receipt.action.encoding is BASE64');
  const raw = Buffer.from(body.content, encoding === 'BASE64' ? 'base64' : 'utf8');
  return {
    raw,
    mailFrom: mail.source ?? '',
    recipients: recipients as string[],
    sesMessageId: mail.messageId,
    verdicts: {
      spf: verdict(receipt.spfVerdict),
      dkim: verdict(receipt.dkimVerdict),
      dmarc: verdict(receipt.dmarcVerdict),
      spam: verdict(receipt.spamVerdict),
      virus: verdict(receipt.virusVerdict),
    },
  };
}
