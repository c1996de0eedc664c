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

/**
 * What one build chose that its input does not hold: the Date field's value, the base of the
 * MIME boundaries (random per message) and the DKIM-Signature field's value (a signature is not
 * reproducible without the key and the same instant). With the same mail and this stamp,
 * `buildMessage` writes the same bytes again: how a sent message is shown without storing it.
 */
export interface MessageStamp {
  /** The Date field's value as written (`Wed, 25 Nov 2026 04:02:58 +0000`). */
  date: string;
  boundary: string;
  /** The DKIM-Signature field after `DKIM-Signature: `, folding included; null for unsigned mail. */
  dkimSignature: string | null;
}

/** A message ready for the wire: RFC 5322 bytes with CRLF line ends, and whom SMTP carries it from and to. */
export interface BuiltMessage {
  raw: Buffer;
  envelope: { from: string; to: string[] };
  messageId: string;
  stamp: MessageStamp;
}

const DKIM_FIELD_PREFIX = 'DKIM-Signature: ';

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
 * octets), DKIM-signed when `mail.dkim` is given. Boundaries are random per message. With
 * `options.stamp` (what an earlier build answered), the message is that build's bytes again:
 * its date and boundaries, and its DKIM-Signature field as it was rather than a new signature.
 */
export function buildMessage(mail: OutgoingMail, options: { date?: Date; stamp?: MessageStamp } = {}): BuiltMessage {
  const { stamp } = options;
  const [from] = mailboxes(mail.from);
  if (!from) throw new Error('The mail has no From address');
  const to = mailboxes(mail.to);
  const messageId = messageIdValue(mail.messageId);

  const fields: HeaderField[] = [field('From', formatMailbox(from))];
  // No recipients: no To field (SMTP refuses the message without RCPT TO anyway).
  const shownTo = mail.shownTo !== undefined ? mailboxes(mail.shownTo) : to;
  if (shownTo.length) fields.push(field('To', shownTo.map(formatMailbox).join(', ')));
  const cc = mail.cc !== undefined ? mailboxes(mail.cc) : [];
  if (cc.length) fields.push(field('Cc', cc.map(formatMailbox).join(', ')));
  if (mail.replyTo) {
    const replyTo = mailboxes(mail.replyTo);
    if (replyTo.length) fields.push(field('Reply-To', replyTo.map(formatMailbox).join(', ')));
  }
  fields.push({ name: 'Subject', line: unstructuredField('Subject', mail.subject) });
  const date = stamp?.date ?? dateValue(options.date ?? new Date());
  fields.push(field('Date', date), field('Message-ID', messageId));
  for (const [rawName, value] of Object.entries(mail.headers ?? {})) {
    const name = fieldName(rawName);
    if (!name || MESSAGE_OWN_FIELDS.has(name.toLowerCase()) || typeof value !== 'string' || !value.trim()) continue;
    fields.push({ name, line: unstructuredField(name, value) });
  }
  fields.push(field('MIME-Version', '1.0'));
  const boundary = stamp?.boundary ?? `=_${crypto.randomUUID()}`;
  const root = contentTree(mail, boundary);
  fields.push(...root.fields);

  let head = '';
  for (const f of fields) head += f.line + CRLF;
  const body = root.body ? root.body + CRLF : '';
  const dkimField = stamp
    ? stamp.dkimSignature === null
      ? null
      : DKIM_FIELD_PREFIX + stamp.dkimSignature
    : mail.dkim
      ? dkimSignatureField(fields, body, mail.dkim)
      : null;
  if (dkimField !== null) head = dkimField + CRLF + head;
  const envelopeTo = [...new Set(to.map((m) => m.address))];
  return {
    raw: Buffer.from(head + CRLF + body, 'utf8'),
    envelope: { from: mail.envelopeFrom ?? from.address, to: envelopeTo },
    messageId,
    stamp: { date, boundary, dkimSignature: dkimField === null ? null : dkimField.slice(DKIM_FIELD_PREFIX.length) },
  };
}
