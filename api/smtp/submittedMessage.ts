import crypto from 'node:crypto';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import type { EmailAttachment } from '../../db/emails/emailRepository';
import { MESSAGE_OWN_FIELDS } from '../../mail/mime/messageBuilder';
import { quotedString } from '../../mail/mime/headerFields';
import { MAX_ATTACHMENTS, MAX_BODY_CHARACTERS, MAX_CUSTOM_HEADERS } from '../schemas/sendSchemas';
import { emailAddress } from '../schemas/commonFields';
import { attachmentsLimitProblem } from '../../services/sending/transactionalSend';

/**
 * What the SMTP relay reads out of a submitted message (contract 20): the parts /v1/send would be
 * given, checked against the same limits (contract 9), plus what a relayed message keeps that a
 * request has no field for (its To and Cc as written, its own header fields). Parsing is the
 * relay's input validation, as parseBody is a route's; nothing here touches the database.
 */
export interface SubmittedMessage {
  /** The Message-ID without angle brackets; null when the message has none. */
  messageId: string | null;
  from: { address: string; name: string | null };
  replyTo: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  attachments: EmailAttachment[];
  /** Custom header fields plus `To` and `Cc` as written (see TransactionalSendRequest.headers). */
  headers: Record<string, string>;
  /** Display names the To and Cc fields give addresses, by lower-cased address. */
  namesByAddress: Map<string, string>;
  /** Identifies the message's content across resubmissions (not its Date, boundaries or trace fields). */
  contentHash: string;
}

/** A message the relay refuses: an SMTP reply code and text (with its enhanced status code). */
export interface MessageRefusal {
  code: number;
  message: string;
}

/** Header fields of a submitted message that are not carried to the recipients: the relays' traces and verdicts. */
const NOT_CARRIED = new Set(['authentication-results', 'arc-seal', 'arc-message-signature', 'arc-authentication-results', 'x-original-to', 'delivered-to']);

const refuse = (code: number, message: string): { refusal: MessageRefusal } => ({ refusal: { code, message } });

function addressList(field: AddressObject | AddressObject[] | undefined): Array<{ address: string; name: string }> {
  const objects = field ? (Array.isArray(field) ? field : [field]) : [];
  const out: Array<{ address: string; name: string }> = [];
  for (const object of objects) {
    for (const entry of object.value) {
      // A group (`team: a@x, b@y;`) is flattened into its members.
      for (const member of entry.group ?? [entry]) {
        if (member.address) out.push({ address: member.address, name: member.name ?? '' });
      }
    }
  }
  return out;
}

/** An address list as a header value the builder parses back (names quoted, so a comma in one stays in it). */
function writtenList(list: Array<{ address: string; name: string }>): string {
  return list.map((m) => (m.name ? `${quotedString(m.name)} <${m.address}>` : m.address)).join(', ');
}

const hasLineBreak = (value: string) => /[\r\n\u2028\u2029\u0085]/.test(value);

/** Header fields to carry, by their name as written; the first of a repeated name is kept. */
function customHeaders(parsed: ParsedMail): { headers: Record<string, string> } | { refusal: MessageRefusal } {
  const headers: Record<string, string> = {};
  const seen = new Set<string>();
  for (const { key, line } of parsed.headerLines) {
    if (MESSAGE_OWN_FIELDS.has(key) || NOT_CARRIED.has(key) || key.startsWith('content-') || seen.has(key)) continue;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    if (!/^[!-9;-~]{1,100}$/.test(name)) continue;
    // mailparser's decoded value when it is text (encoded-words decoded), else the field as written, unfolded.
    const decoded = parsed.headers.get(key);
    const value =
      typeof decoded === 'string'
        ? decoded
        : line
            .slice(colon + 1)
            .replace(/\r?\n[ \t]+/g, ' ')
            .trim();
    if (hasLineBreak(value)) return refuse(554, `5.6.0 The ${name} header must not contain CR or LF`);
    if (!value) continue;
    seen.add(key);
    headers[name] = value.slice(0, 998);
  }
  if (seen.size > MAX_CUSTOM_HEADERS) return refuse(554, `5.6.0 At most ${MAX_CUSTOM_HEADERS} custom header fields (this message has ${seen.size})`);
  return { headers };
}

function contentHash(message: Omit<SubmittedMessage, 'contentHash' | 'namesByAddress' | 'messageId'>): string {
  const hash = crypto.createHash('sha256');
  const { attachments, ...rest } = message;
  hash.update(JSON.stringify(rest));
  for (const a of attachments) {
    hash.update(JSON.stringify([a.filename, a.contentType, a.contentId, a.disposition]));
    hash.update(crypto.createHash('sha256').update(a.content).digest());
  }
  return hash.digest('hex');
}

/**
 * Parses a submitted message and applies /v1/send's rules to it; answers the message, or the
 * reply that refuses it (5xx: the client must not send it again as it is). Never throws.
 */
export async function readSubmittedMessage(
  raw: Buffer,
  limits: { attachmentsMaxBytes: number },
): Promise<{ message: SubmittedMessage } | { refusal: MessageRefusal }> {
  let parsed: ParsedMail;
  try {
    // The parts as the client wrote them: no text made from HTML or HTML from text, cid: links kept.
    parsed = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, keepCidLinks: true });
  } catch (err) {
    return refuse(554, `5.6.0 The message could not be read as MIME: ${(err as Error).message}`.slice(0, 400));
  }

  const fromList = addressList(parsed.from);
  if (!parsed.headers.has('from')) return refuse(554, '5.6.0 The message has no From header');
  if (fromList.length !== 1) return refuse(554, '5.6.0 The From header must hold exactly one address');
  const from = emailAddress.safeParse(fromList[0].address);
  if (!from.success) return refuse(554, `5.6.0 The From header's address is not valid: ${fromList[0].address}`.slice(0, 400));

  const subject = parsed.subject ?? '';
  if (hasLineBreak(subject)) return refuse(554, '5.6.0 The Subject must not contain CR or LF');
  if (subject.length > 998) return refuse(554, '5.6.0 The Subject is longer than 998 characters');
  if (fromList[0].name && hasLineBreak(fromList[0].name)) return refuse(554, '5.6.0 The From name must not contain CR or LF');

  const html = typeof parsed.html === 'string' && parsed.html.length ? parsed.html : null;
  const text = parsed.text?.length ? parsed.text : null;
  if ((html?.length ?? 0) > MAX_BODY_CHARACTERS || (text?.length ?? 0) > MAX_BODY_CHARACTERS)
    return refuse(552, `5.3.4 A message part is longer than ${MAX_BODY_CHARACTERS} characters`);

  // Parts mailparser could not place (a multipart without its boundary, say) come out as attachments
  // or nothing: a message with neither text, HTML nor attachment has nothing to send.
  const attachments: EmailAttachment[] = parsed.attachments.map((a, index) => ({
    filename: (a.filename ?? `attachment-${index + 1}`).replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 255) || `attachment-${index + 1}`,
    contentType: a.contentType || null,
    contentId: a.contentId ? a.contentId.replace(/^<|>$/g, '') : null,
    disposition: a.contentDisposition === 'inline' || (a.related && a.contentId) ? 'inline' : 'attachment',
    content: a.content,
  }));
  if (!html && !text && !attachments.length) return refuse(554, '5.6.0 The message has no text, HTML or attachment to send');
  if (attachments.length > MAX_ATTACHMENTS) return refuse(552, `5.3.4 At most ${MAX_ATTACHMENTS} attachments (this message has ${attachments.length})`);
  const tooLarge = attachmentsLimitProblem(
    attachments.reduce((sum, a) => sum + a.content.length, 0),
    limits.attachmentsMaxBytes,
  );
  if (tooLarge) return refuse(552, `5.3.4 ${tooLarge}`);

  const custom = customHeaders(parsed);
  if ('refusal' in custom) return custom;
  const to = addressList(parsed.to);
  const cc = addressList(parsed.cc);
  const headers: Record<string, string> = { ...custom.headers };
  if (to.length) headers.To = writtenList(to);
  if (cc.length) headers.Cc = writtenList(cc);
  const replyToList = addressList(parsed.replyTo);

  const namesByAddress = new Map<string, string>();
  for (const m of [...to, ...cc]) if (m.name && !namesByAddress.has(m.address.toLowerCase())) namesByAddress.set(m.address.toLowerCase(), m.name);

  const body = {
    from: { address: from.data, name: fromList[0].name || null },
    replyTo: replyToList.length ? writtenList(replyToList) : null,
    subject,
    html,
    text,
    attachments,
    headers,
  };
  const messageId = parsed.messageId ? parsed.messageId.replace(/^<|>$/g, '').trim() || null : null;
  return { message: { ...body, messageId, namesByAddress, contentHash: contentHash(body) } };
}
