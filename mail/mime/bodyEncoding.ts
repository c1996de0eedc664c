import { CRLF, utf8Bytes } from './headerFields';

/**
 * Content-Transfer-Encodings of RFC 2045 for the parts the builder writes. Every line it
 * returns ends in CRLF when joined, is at most 76 characters and is ASCII, so the message needs
 * neither 8BITMIME nor anything of the relay.
 */
export type TransferEncoding = '7bit' | 'quoted-printable' | 'base64';

/** Text that 7bit carries as it is: printable ASCII, tabs and line feeds. */
const SEVEN_BIT = /^[\t\n\x20-\x7e]*$/;
const LINE = 76;

const HEX_ESCAPES = Array.from({ length: 256 }, (_, i) => '=' + i.toString(16).toUpperCase().padStart(2, '0'));

/** The text with LF line ends: CRLF, a lone CR and a lone LF all end a line (RFC 2045 canonical text, once LF becomes CRLF). */
function lfLines(text: string): string {
  return text.indexOf('\r') < 0 ? text : text.replace(/\r\n?/g, '\n');
}

const toCrlf = (text: string) => text.replace(/\n/g, CRLF);

/** Whether a line of `text` (LF line ends) is longer than `limit`. */
function hasLongLine(text: string, limit: number): boolean {
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n', start);
    if ((end < 0 ? text.length : end) - start > limit) return true;
    if (end < 0) return false;
    start = end + 1;
  }
}

/** What quoted-printable cannot write as it is: a line feed, `=`, controls, non-ASCII, and whitespace that ends a line. */
const QP_SPECIAL = /[^\t\x20-\x3c\x3e-\x7e]|[ \t](?=\n|$)/g;

/** The =XX escapes of one character's UTF-8 bytes; `at` may start a surrogate pair. */
function qpEscape(text: string, at: number): string {
  const c = text.charCodeAt(at);
  if (c < 0x80) return HEX_ESCAPES[c];
  let codePoint = c;
  if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(at + 1) & 0xfc00) === 0xdc00)
    codePoint = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(at + 1) - 0xdc00);
  let escaped = '';
  for (const byte of utf8Bytes(codePoint)) escaped += HEX_ESCAPES[byte];
  return escaped;
}

/**
 * Quoted-printable of a text with LF line ends (RFC 2045 6.7), in one pass that jumps from one
 * character needing care to the next: each LF a hard line break (CRLF), whitespace before it or
 * at the end escaped, soft breaks so that no line passes 76 characters, a character's UTF-8
 * bytes never split across lines. Also counts the characters that are not ASCII, which decides
 * whether base64 would have been the smaller.
 */
export function quotedPrintable(text: string): { body: string; nonAscii: number } {
  let out = '';
  let column = 0;
  let nonAscii = 0;
  let at = 0;
  const length = text.length;
  const room = LINE - 1;
  for (;;) {
    QP_SPECIAL.lastIndex = at;
    const match = QP_SPECIAL.exec(text);
    const stop = match ? match.index : length;
    while (column + (stop - at) > room) {
      const take = room - column;
      out += text.slice(at, at + take) + '=' + CRLF;
      at += take;
      column = 0;
    }
    out += text.slice(at, stop);
    column += stop - at;
    if (!match) return { body: out, nonAscii };
    const c = text.charCodeAt(stop);
    if (c === 0x0a) {
      out += CRLF;
      column = 0;
      at = stop + 1;
      continue;
    }
    if (c >= 0x80 || (c < 0x20 && c !== 0x09)) nonAscii++;
    const escaped = qpEscape(text, stop);
    if (column + escaped.length > room) {
      out += '=' + CRLF;
      column = 0;
    }
    out += escaped;
    column += escaped.length;
    at = stop + (escaped.length === 12 ? 2 : 1);
  }
}

/** Base64 in lines of 76 characters (RFC 2045 6.8). */
export function base64Lines(content: Buffer): string {
  const encoded = content.toString('base64');
  if (encoded.length <= 76) return encoded;
  const out: string[] = [];
  for (let at = 0; at < encoded.length; at += 76) out.push(encoded.slice(at, at + 76));
  return out.join(CRLF);
}

/**
 * A text part's body and its encoding: 7bit for printable ASCII in lines of at most 76
 * characters (nodemailer's choice); else quoted-printable, unless more than one character in 12
 * is not ASCII: from there base64 is the smaller (a non-ASCII character costs 6 to 9 characters
 * in quoted-printable, its 2 to 3 bytes times 4/3 in base64), which is Cyrillic, Greek, CJK and
 * the like. Mostly-ASCII text thus stays readable in the source, as nodemailer writes it.
 */
export function encodeText(text: string): { encoding: TransferEncoding; body: string } {
  const lf = lfLines(text);
  if (SEVEN_BIT.test(lf) && !hasLongLine(lf, LINE)) return { encoding: '7bit', body: toCrlf(lf) };
  const qp = quotedPrintable(lf);
  if (qp.nonAscii * 12 <= lf.length) return { encoding: 'quoted-printable', body: qp.body };
  return { encoding: 'base64', body: base64Lines(Buffer.from(toCrlf(lf), 'utf8')) };
}
