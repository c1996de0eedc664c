import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import sanitizeHtml from 'sanitize-html';

/** A received message as far as it could be read: a malformed one yields what parsed, never an error. */
export interface ReceivedMessage {
  /** mailparser's reading; null when it could not read the message at all. */
  mail: ParsedMail | null;
  fromAddress: string | null;
  fromName: string | null;
  subject: string;
  /** Without angle brackets; empty when the message has none. */
  messageId: string;
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  attachments: Array<{ index: number; filename: string | null; contentType: string; size: number; content: Buffer }>;
  /** An `Auto-Submitted` header other than `no` (RFC 3834): an automated message. */
  autoSubmitted: boolean;
}

/** Bounds what one message may cost to read (a 10 MB message of nested parts or one huge HTML part). */
const PARSE_OPTIONS = { maxHtmlLengthToParse: 2 * 1024 * 1024, skipTextToHtml: true, skipImageLinks: true } as const;

function firstAddress(value: AddressObject | AddressObject[] | undefined): { address: string | null; name: string | null } {
  const list = Array.isArray(value) ? value : value ? [value] : [];
  for (const group of list) {
    for (const entry of group.value) {
      if (entry.address) return { address: entry.address, name: entry.name || null };
    }
  }
  return { address: null, name: null };
}

/** Header lines as written (names in their own case, folded values unfolded), in message order. */
function headerList(mail: ParsedMail | null, raw: Buffer): Array<{ name: string; value: string }> {
  const lines = mail?.headerLines ?? rawHeaderLines(raw);
  return lines.map(({ line }) => {
    const colon = line.indexOf(':');
    return colon < 0
      ? { name: line.trim(), value: '' }
      : {
          name: line.slice(0, colon).trim(),
          value: line
            .slice(colon + 1)
            .replace(/\r?\n[ \t]+/g, ' ')
            .trim(),
        };
  });
}

function rawHeaderLines(raw: Buffer): Array<{ key: string; line: string }> {
  const text = raw.subarray(0, 256 * 1024).toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const block = end < 0 ? text : text.slice(0, end);
  return block
    .split(/\r?\n(?![ \t])/)
    .filter((l) => l.includes(':'))
    .map((line) => ({ key: line.slice(0, line.indexOf(':')).trim().toLowerCase(), line }));
}

/** PostgreSQL text and jsonb hold no NUL character; a message may carry any. */
const withoutNul = <T extends string | null>(value: T): T => (value === null ? value : (value.replace(/\u0000/g, '') as T));

export async function readReceivedMessage(raw: Buffer): Promise<ReceivedMessage> {
  let mail: ParsedMail | null = null;
  try {
    mail = await simpleParser(raw, PARSE_OPTIONS);
  } catch {
    mail = null;
  }
  const headers = headerList(mail, raw).map((h) => ({ name: withoutNul(h.name), value: withoutNul(h.value) }));
  const header = (name: string) => headers.find((h) => h.name.toLowerCase() === name)?.value ?? null;
  const from = mail ? firstAddress(mail.from) : { address: null, name: null };
  const autoSubmitted = (header('auto-submitted') ?? 'no').split(';')[0].trim().toLowerCase();
  return {
    mail,
    fromAddress: withoutNul(from.address),
    fromName: withoutNul(from.name),
    subject: withoutNul(mail?.subject ?? header('subject') ?? ''),
    messageId: withoutNul((mail?.messageId ?? header('message-id') ?? '').trim().replace(/^<|>$/g, '')),
    text: withoutNul(mail?.text ?? null),
    html: withoutNul(mail && typeof mail.html === 'string' ? mail.html : null),
    headers,
    attachments: (mail?.attachments ?? []).map((a, index) => ({
      index,
      filename: a.filename ?? null,
      contentType: safeContentType(a.contentType),
      size: a.size ?? a.content.length,
      content: a.content,
    })),
    autoSubmitted: autoSubmitted !== '' && autoSubmitted !== 'no',
  };
}

/**
 * A received message's HTML as the API shows it (contract 20): no scripts, no event handlers, no
 * `javascript:` links; what mail HTML is made of (tables, inline styles, images) is kept.
 */
export function sanitizeReceivedHtml(html: string): string {
  return sanitizeHtml(html, {
    allowedTags: sanitizeHtml.defaults.allowedTags.concat(['img', 'center', 'font', 'span', 'div']),
    allowedAttributes: {
      '*': ['style', 'class', 'align', 'valign', 'width', 'height', 'bgcolor', 'color', 'dir', 'lang', 'title'],
      a: ['href', 'name', 'target', 'rel'],
      img: ['src', 'alt', 'width', 'height'],
      td: ['colspan', 'rowspan'],
      th: ['colspan', 'rowspan'],
      table: ['border', 'cellpadding', 'cellspacing'],
      font: ['face', 'size', 'color'],
    },
    allowedSchemes: ['http', 'https', 'mailto', 'cid', 'data'],
    allowedSchemesByTag: { img: ['http', 'https', 'cid', 'data'], a: ['http', 'https', 'mailto'] },
  });
}

/**
 * The sender's content type as a plain `type/subtype`, else application/octet-stream: it is shown
 * in the record and served as a Content-Type header, where a stray character would make the
 * answer fail rather than merely mislabel the bytes.
 */
function safeContentType(value: string | undefined): string {
  const type = (value ?? '').trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(type) ? type : 'application/octet-stream';
}
