import { CRLF, utf8Bytes } from './headerFields';

/**
 * Content-Transfer-Encodings of RFC 2045 for the parts the builder writes. Every line it
 * returns ends in CRLF when joined, is at most 76 characters and is ASCII, so the message needs
 * neither 8BITMIME nor anything of the relay.
 */
export type TransferEncoding = '7bit' | 'quoted-printable' | 'base64';

const LINE_BREAK = /\r\n|\r|\n/;
/** A text that 7bit carries as it is: printable ASCII and tabs (line breaks are split off first). */
const SEVEN_BIT_LINE = /^[\t\x20-\x7e]*$/;
/** Characters quoted-printable writes as they are (RFC 2045 6.7 (2)): printable ASCII but `=`, plus tab. */
const QP_LITERAL_LINE = /^[\t\x20-\x3c\x3e-\x7e]*$/;
const QP_ESCAPED = /[^\t\x20-\x3c\x3e-\x7e]/gu;
const QP_LINE = 76;

const HEX_ESCAPES = Array.from({ length: 256 }, (_, i) => '=' + i.toString(16).toUpperCase().padStart(2, '0'));

/** The lines of a text part: CRLF, a lone CR and a lone LF all end a line (RFC 2045 canonical text). */
export function textLines(text: string): string[] {
  return text.split(LINE_BREAK);
}

/**
 * nodemailer's choice, which mail clients have long read well: 7bit for printable ASCII in
 * lines of at most 76 characters; else quoted-printable when Latin letters outnumber the rest
 * (mostly-ASCII text stays readable and small), else base64 (Cyrillic, CJK, …: smaller).
 */
export function textTransferEncoding(text: string, lines: string[]): TransferEncoding {
  let ascii = true;
  let short = true;
  for (const line of lines) {
    if (line.length > QP_LINE) short = false;
    if (!SEVEN_BIT_LINE.test(line)) ascii = false;
  }
  if (ascii) return short ? '7bit' : 'quoted-printable';
  let latin = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)) latin++;
    else if (code >= 0x80 || (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d)) other++;
  }
  return other < latin ? 'quoted-printable' : 'base64';
}

function qpEscape(char: string): string {
  const code = char.codePointAt(0)!;
  if (code < 0x80) return HEX_ESCAPES[code];
  let out = '';
  for (const byte of utf8Bytes(code)) out += HEX_ESCAPES[byte];
  return out;
}

/**
 * Quoted-printable of a text part (RFC 2045 6.7): each line of the text a hard line break,
 * whitespace at a line's end escaped, soft breaks so that no line passes 76 characters, and
 * never a `=XX` cut apart.
 */
export function quotedPrintable(lines: string[]): string {
  const out: string[] = [];
  for (const line of lines) {
    let escaped = QP_LITERAL_LINE.test(line) ? line : line.replace(QP_ESCAPED, qpEscape);
    const last = escaped.charCodeAt(escaped.length - 1);
    if (last === 0x20 || last === 0x09) escaped = escaped.slice(0, -1) + HEX_ESCAPES[last];
    if (escaped.length <= QP_LINE) {
      out.push(escaped);
      continue;
    }
    let at = 0;
    while (escaped.length - at > QP_LINE) {
      let cut = at + QP_LINE - 1;
      if (escaped.charCodeAt(cut - 1) === 0x3d) cut -= 1;
      else if (escaped.charCodeAt(cut - 2) === 0x3d) cut -= 2;
      out.push(escaped.slice(at, cut) + '=');
      at = cut;
    }
    out.push(escaped.slice(at));
  }
  return out.join(CRLF);
}

/** Base64 in lines of 76 characters (RFC 2045 6.8). */
export function base64Lines(content: Buffer): string {
  const encoded = content.toString('base64');
  if (encoded.length <= 76) return encoded;
  const out: string[] = [];
  for (let at = 0; at < encoded.length; at += 76) out.push(encoded.slice(at, at + 76));
  return out.join(CRLF);
}

/** A text part's body in the encoding chosen for it. */
export function encodeText(text: string): { encoding: TransferEncoding; body: string } {
  const lines = textLines(text);
  const encoding = textTransferEncoding(text, lines);
  if (encoding === '7bit') return { encoding, body: lines.join(CRLF) };
  if (encoding === 'quoted-printable') return { encoding, body: quotedPrintable(lines) };
  return { encoding, body: base64Lines(Buffer.from(lines.join(CRLF), 'utf8')) };
}
