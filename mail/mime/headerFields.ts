import { domainToASCII } from 'node:url';
import addressparser from 'nodemailer/lib/addressparser';

/**
 * Header fields as RFC 5322 and RFC 2047 want them: values folded at whitespace to 78
 * characters, text that is not printable ASCII as encoded-words, display names quoted when they
 * hold specials, and no line over 998 octets.
 */

export const CRLF = '\r\n';
const FOLD_AT = 78;
const LINE_MAX = 998;
/** An encoded-word's `=?UTF-8?Q?` and `?=`. */
const ENCODED_WORD_OVERHEAD = 12;
/**
 * RFC 2047 section 2 allows 75 characters; 60 leaves room for `Subject: ` or `Reply-To: ` in
 * front of the first word within the 78 characters of a line.
 */
const ENCODED_WORD_MAX = 60;

/** Printable ASCII, space and tab: such a value goes out as it is. */
const PRINTABLE = /^[\t\x20-\x7e]*$/;
/** A display name that needs neither quotes nor encoding (nodemailer's rule). */
const BARE_NAME = /^[\w ]*$/;

/** `Name: value`, folded at spaces so that lines stay within 78 characters where a space allows it. */
export function foldField(name: string, value: string): string {
  const line = `${name}: ${value}`;
  if (line.length <= FOLD_AT) return line;
  const words = value.split(' ');
  let out = '';
  let current = `${name}:`;
  for (const word of words) {
    // A fold before an empty word (a run of spaces) would leave a line of only whitespace.
    if (word && current.length + 1 + word.length > FOLD_AT && current.trim().length > name.length + 1) {
      out += current + CRLF;
      current = ' ' + word;
    } else {
      current += ' ' + word;
    }
  }
  return out + current;
}

/** The longest run without a space: what folding cannot shorten. */
function longestWord(value: string): number {
  let longest = 0;
  let start = 0;
  for (let at = value.indexOf(' '); ; at = value.indexOf(' ', start)) {
    const end = at < 0 ? value.length : at;
    if (end - start > longest) longest = end - start;
    if (at < 0) return longest;
    start = at + 1;
  }
}

/**
 * Q (quoted-printable) for text mostly in Latin letters, B (base64) otherwise: nodemailer's
 * rule, which keeps encoded subjects and names short and readable.
 */
function wordEncoding(value: string): 'Q' | 'B' {
  let latin = 0;
  let other = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)) latin++;
    else if (code >= 0x80 || (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d)) other++;
  }
  return other < latin ? 'Q' : 'B';
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).toUpperCase().padStart(2, '0'));

/** The UTF-8 bytes of one code point (a lone surrogate becomes U+FFFD, as Buffer.from would have it). */
export function utf8Bytes(codePoint: number): number[] {
  if (codePoint < 0x80) return [codePoint];
  if (codePoint < 0x800) return [0xc0 | (codePoint >> 6), 0x80 | (codePoint & 0x3f)];
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return [0xef, 0xbf, 0xbd];
  if (codePoint < 0x10000) return [0xe0 | (codePoint >> 12), 0x80 | ((codePoint >> 6) & 0x3f), 0x80 | (codePoint & 0x3f)];
  return [0xf0 | (codePoint >> 18), 0x80 | ((codePoint >> 12) & 0x3f), 0x80 | ((codePoint >> 6) & 0x3f), 0x80 | (codePoint & 0x3f)];
}

/** Q-encoding of one code point, safe in a phrase (RFC 2047 section 5 (3)). */
function qWord(codePoint: number): string {
  if (codePoint === 0x20) return '_';
  if (
    (codePoint >= 0x30 && codePoint <= 0x39) ||
    (codePoint >= 0x41 && codePoint <= 0x5a) ||
    (codePoint >= 0x61 && codePoint <= 0x7a) ||
    codePoint === 0x21 ||
    codePoint === 0x2a ||
    codePoint === 0x2b ||
    codePoint === 0x2d ||
    codePoint === 0x2f
  ) {
    return String.fromCharCode(codePoint);
  }
  let out = '';
  for (const byte of utf8Bytes(codePoint)) out += '=' + HEX[byte];
  return out;
}

/**
 * The whole value as encoded-words of at most 75 characters, separated by spaces (the places a
 * header folds); a character's bytes never straddle two words.
 */
export function encodedWords(value: string): string {
  const encoding = wordEncoding(value);
  const room = ENCODED_WORD_MAX - ENCODED_WORD_OVERHEAD;
  const words: string[] = [];
  if (encoding === 'Q') {
    let word = '';
    for (const char of value) {
      const encoded = qWord(char.codePointAt(0)!);
      if (word.length + encoded.length > room) {
        words.push(word);
        word = '';
      }
      word += encoded;
    }
    if (word || !words.length) words.push(word);
  } else {
    // 45 bytes make 60 base64 characters, the most that fits in one word.
    const maxBytes = Math.floor(room / 4) * 3;
    let chunk = '';
    let chunkBytes = 0;
    for (const char of value) {
      const bytes = utf8Bytes(char.codePointAt(0)!).length;
      if (chunkBytes + bytes > maxBytes) {
        words.push(Buffer.from(chunk, 'utf8').toString('base64'));
        chunk = '';
        chunkBytes = 0;
      }
      chunk += char;
      chunkBytes += bytes;
    }
    if (chunk || !words.length) words.push(Buffer.from(chunk, 'utf8').toString('base64'));
  }
  return words.map((w) => `=?UTF-8?${encoding}?${w}?=`).join(' ');
}

/** One line: CR and LF become spaces (nodemailer's treatment; the API refuses them anyway). */
function oneLine(value: string): string {
  return value.indexOf('\r') < 0 && value.indexOf('\n') < 0 ? value : value.replace(/\r\n|\r|\n/g, ' ');
}

/**
 * An unstructured field (Subject, a custom header): as it is when it is printable ASCII that
 * folds within 998 octets and holds nothing a reader would decode, else as encoded-words.
 */
export function unstructuredField(name: string, rawValue: string): string {
  const value = oneLine(rawValue);
  const plain = PRINTABLE.test(value) && value.indexOf('=?') < 0 && name.length + 2 + longestWord(value) <= LINE_MAX;
  return foldField(name, plain ? value : encodedWords(value));
}

/** A header field name as RFC 5322 allows it (printable ASCII without the colon). */
export function fieldName(name: string): string {
  return name.replace(/[\s\x00-\x20\x7f:]/g, '');
}

export interface Mailbox {
  name: string;
  address: string;
}

/** An addr-spec with its controls and angle brackets removed, its domain in ASCII (IDNA). */
function normalizeAddress(address: string): string {
  const cleaned = address.replace(/[\x00-\x1f\x7f<>]+/g, '').trim();
  const at = cleaned.lastIndexOf('@');
  if (at < 0) return cleaned;
  const domain = cleaned.slice(at + 1);
  if (/^[\x20-\x7e]*$/.test(domain)) return cleaned;
  return `${cleaned.slice(0, at)}@${domainToASCII(domain) || domain}`;
}

/** Mailboxes of an address field given as text (`a@x`, `Name <a@x>`, `"Doe, J" <a@x>`) or as name and address. */
export function mailboxes(value: string | Mailbox | Array<string | Mailbox>): Mailbox[] {
  const out: Mailbox[] = [];
  for (const entry of Array.isArray(value) ? value : [value]) {
    if (typeof entry !== 'string') {
      out.push({ name: oneLine(entry.name ?? ''), address: normalizeAddress(entry.address) });
      continue;
    }
    for (const parsed of addressparser(entry, { flatten: true })) {
      if (parsed.address) out.push({ name: oneLine(parsed.name ?? ''), address: normalizeAddress(parsed.address) });
    }
  }
  return out;
}

/** A display name as RFC 5322 wants it: bare, a quoted-string when it holds specials, encoded-words when it is not ASCII. */
function encodeDisplayName(name: string): string {
  if (BARE_NAME.test(name)) return name;
  if (/^[\x20-\x7e]*$/.test(name) && name.indexOf('=?') < 0) return quotedString(name);
  return encodedWords(name);
}

export function quotedString(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

export function formatMailbox(mailbox: Mailbox): string {
  return mailbox.name ? `${encodeDisplayName(mailbox.name)} <${mailbox.address}>` : mailbox.address;
}

/** A mailbox for people to read (the outbox's listing): the name quoted when it holds specials, never encoded. */
export function displayMailbox(mailbox: Mailbox): string {
  if (!mailbox.name) return mailbox.address;
  const name = /^[\p{L}\p{N} !#$%&'*+\-/=?^_`{|}~]+$/u.test(mailbox.name) ? mailbox.name : quotedString(mailbox.name);
  return `${name} <${mailbox.address}>`;
}

/** RFC 5322 date-time, as nodemailer writes it. */
export function dateValue(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000');
}

/** `<id>`: controls removed, angle brackets added when missing. */
export function messageIdValue(value: string): string {
  const id = value.replace(/[\x00-\x1f\x7f\s]/g, '');
  return `${id.startsWith('<') ? '' : '<'}${id}${id.endsWith('>') ? '' : '>'}`;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * A MIME parameter (RFC 2045 / RFC 2231): a token, a quoted-string, or for text that is not
 * ASCII (or too long for one line) RFC 2231 percent-encoded UTF-8, in sections of 60 characters.
 */
export function mimeParameter(key: string, value: string): string {
  const line = oneLine(value);
  if (/^[\x20-\x7e]*$/.test(line) && line.length < 75) return `${key}=${TOKEN.test(line) ? line : quotedString(line)}`;
  const encoded = encodeURIComponent(wellFormed(line)).replace(/['()*]/g, (c) => '%' + HEX[c.charCodeAt(0)]);
  const sections: string[] = [];
  for (let at = 0; at < encoded.length;) {
    let end = Math.min(at + 60, encoded.length);
    // Never cut a %XX apart.
    if (encoded.charCodeAt(end - 1) === 0x25) end -= 1;
    else if (encoded.charCodeAt(end - 2) === 0x25) end -= 2;
    sections.push(encoded.slice(at, end));
    at = end;
  }
  if (sections.length === 1) return `${key}*=utf-8''${sections[0]}`;
  return sections.map((s, i) => `${key}*${i}*=${i === 0 ? "utf-8''" : ''}${s}`).join('; ');
}

/** Lone surrogates as U+FFFD (encodeURIComponent throws on them); String.prototype.toWellFormed is in Node 20, not yet in lib ES2022. */
export function wellFormed(value: string): string {
  return (value as unknown as { toWellFormed(): string }).toWellFormed();
}

/**
 * The `name` parameter of an attachment's Content-Type: older clients (Outlook among them) read
 * only this one, and only as encoded-words in a quoted-string, so non-ASCII names go that way.
 */
export function legacyNameParameter(filename: string): string {
  const line = oneLine(filename);
  if (/^[\x20-\x7e]*$/.test(line) && line.indexOf('=?') < 0) return `name=${TOKEN.test(line) ? line : quotedString(line)}`;
  return `name="${encodedWords(line)}"`;
}
