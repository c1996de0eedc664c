import crypto from 'node:crypto';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import type { OutgoingMail } from './outgoingMail';
import { base64Lines, encodeText } from './bodyEncoding';
import { dkimSignatureField, type HeaderField } from './dkimSignature';
import {
  CRLF,
  dateValue,
  fieldName,
  foldField,
  formatMailbox,
  legacyNameParameter,
  mailboxes,
  messageIdValue,
  mimeParameter,
  unstructuredField,
} from './headerFields';

/** A message ready for the wire: RFC 5322 bytes with CRLF line ends, and whom SMTP carries it from and to. */
export interface BuiltMessage {
  raw: Buffer;
  envelope: { from: string; to: string[] };
  messageId: string;
}

interface Part {
  fields: HeaderField[];
  /** Lines joined by CRLF, without a CRLF after the last one (the delimiter that follows brings it). */
  body: string;
}

/**
 * Fields that make the message's own structure, identity, route or signature: the builder writes
 * them itself (Bcc a message never shows; Return-Path and Received belong to relays). A custom
 * header by one of these names is left out, so it can neither replace nor repeat them, and the API
 * refuses one from a caller (api/schemas/sendSchemas.ts) rather than drop it unseen.
 */
export const MESSAGE_OWN_FIELDS: ReadonlySet<string> = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'sender',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'content-id',
  'dkim-signature',
  'return-path',
  'received',
]);

const field = (name: string, value: string): HeaderField => ({ name, line: foldField(name, value) });
const withoutControls = (value: string) => value.replace(/[\x00-\x1f\x7f]/g, '');

function textPart(contentType: string, text: string): Part {
  const { encoding, body } = encodeText(text);
  return { fields: [field('Content-Type', contentType), field('Content-Transfer-Encoding', encoding)], body };
}

type Attachment = NonNullable<OutgoingMail['attachments']>[number];

function attachmentPart(attachment: Attachment): Part {
  const contentType = withoutControls(attachment.contentType || detectMimeType(attachment.filename.split('.').pop()));
  const isImage = /^image\//i.test(contentType);
  const disposition = attachment.contentDisposition || (isImage && attachment.cid ? 'inline' : 'attachment');
  const fields = [field('Content-Type', `${contentType}; ${legacyNameParameter(attachment.filename)}`)];
  if (attachment.cid) fields.push(field('Content-ID', `<${withoutControls(attachment.cid).replace(/[<>\s]/g, '')}>`));
  fields.push(field('Content-Transfer-Encoding', 'base64'), field('Content-Disposition', `${disposition}; ${mimeParameter('filename', attachment.filename)}`));
  return { fields, body: base64Lines(attachment.content) };
}

function multipart(contentType: string, boundary: string, parts: Part[]): Part {
  let body = '';
  for (const part of parts) {
    body += `--${boundary}${CRLF}`;
    for (const f of part.fields) body += f.line + CRLF;
    body += CRLF + part.body + CRLF;
  }
  return { fields: [field('Content-Type', `${contentType}; boundary="${boundary}"`)], body: body + `--${boundary}--` };
}

/**
 * The MIME tree nodemailer's MailComposer builds for the same mail, so that clients see what
 * they saw before: text and HTML as multipart/alternative; attachments with a Content-ID beside
 * the HTML in multipart/related; other attachments after the content in multipart/mixed.
 */
function contentTree(mail: OutgoingMail, boundaryBase: string): Part {
  let boundaries = 0;
  const boundary = () => `${boundaryBase}_${++boundaries}`;
  const text = mail.text ? textPart('text/plain; charset=utf-8', mail.text) : null;
  const html = mail.html ? textPart('text/html; charset=utf-8', mail.html) : null;
  const attachments = mail.attachments ?? [];
  const related = html ? attachments.filter((a) => a.cid) : [];
  const attached = html ? attachments.filter((a) => !a.cid) : attachments;
  const alternatives = [text, html].filter((p): p is Part => p !== null);

  const htmlWithRelated = () =>
    html && related.length ? multipart('multipart/related; type="text/html"', boundary(), [html, ...related.map(attachmentPart)]) : html;
  const content = (): Part[] => {
    if (alternatives.length > 1) return [multipart('multipart/alternative', boundary(), [text!, htmlWithRelated()!])];
    if (html) return [htmlWithRelated()!];
    return alternatives;
  };

  if (attached.length > 1 || (alternatives.length && attached.length === 1)) {
    return multipart('multipart/mixed', boundary(), [...content(), ...attached.map(attachmentPart)]);
  }
  const [single] = content();
  if (single) return single;
  if (attached.length) return attachmentPart(attached[0]);
  return textPart('text/plain; charset=utf-8', '');
}

/**
 * `mail` as the bytes of an RFC 5322 message (CRLF line ends, ASCII only, no line over 998
 * octets), DKIM-signed when `mail.dkim` is given. Boundaries are random per message.
 */
export function buildMessage(mail: OutgoingMail, options: { date?: Date } = {}): BuiltMessage {
  const [from] = mailboxes(mail.from);
  if (!from) throw new Error('The mail has no From address');
  const to = mailboxes(mail.to);
  const messageId = messageIdValue(mail.messageId);

  const fields: HeaderField[] = [field('From', formatMailbox(from))];
  // No recipients: no To field (SMTP refuses the message without RCPT TO anyway).
  if (to.length) fields.push(field('To', to.map(formatMailbox).join(', ')));
  if (mail.replyTo) {
    const replyTo = mailboxes(mail.replyTo);
    if (replyTo.length) fields.push(field('Reply-To', replyTo.map(formatMailbox).join(', ')));
  }
  fields.push({ name: 'Subject', line: unstructuredField('Subject', mail.subject) });
  fields.push(field('Date', dateValue(options.date ?? new Date())), field('Message-ID', messageId));
  for (const [rawName, value] of Object.entries(mail.headers ?? {})) {
    const name = fieldName(rawName);
    if (!name || MESSAGE_OWN_FIELDS.has(name.toLowerCase()) || typeof value !== 'string' || !value.trim()) continue;
    fields.push({ name, line: unstructuredField(name, value) });
  }
  fields.push(field('MIME-Version', '1.0'));
  const root = contentTree(mail, `=_${crypto.randomUUID()}`);
  fields.push(...root.fields);

  let head = '';
  for (const f of fields) head += f.line + CRLF;
  const body = root.body ? root.body + CRLF : '';
  if (mail.dkim) head = dkimSignatureField(fields, body, mail.dkim) + CRLF + head;
  const envelopeTo = [...new Set(to.map((m) => m.address))];
  return { raw: Buffer.from(head + CRLF + body, 'utf8'), envelope: { from: from.address, to: envelopeTo }, messageId };
}
