/**
 * The shape bounds every message taken over SMTP meets (contract 20, issue 26 "bounded
 * everything"), checked while DATA streams in, in one pass over the bytes that never builds a
 * MIME tree: the parsers after it (mailparser on the relay, the worker's on inbound mail) then
 * never see a header section, a line or a nesting their memory or recursion would suffer from.
 * The limits follow Postfix's defaults where Postfix has one; a message past any of them is
 * refused as a whole (552 5.3.4, as a message past the size limit is), none is truncated.
 */

/** Header fields one header section (the message's, a MIME part's, an embedded message's) may hold. */
export const MAX_HEADER_FIELDS = 1000;
/** The longest header field, unfolded, in bytes: Postfix's header_size_limit (102400). */
export const MAX_HEADER_FIELD_BYTES = 102_400;
/**
 * The longest line, header or body, in bytes without its line ending. RFC 5322 asks for 998 but
 * real senders exceed it (unencoded HTML on one line), and Postfix takes such lines (it splits
 * them at line_length_limit = 2048 rather than refusing), so the bound is far above anything a
 * sender means: it keeps a line-based parser from holding megabytes as one line.
 */
export const MAX_LINE_BYTES = 1_048_576;
/** Multipart or embedded message/rfc822 levels one inside the other: Postfix's mime_nesting_limit. */
export const MAX_MIME_NESTING = 100;

export type BoundExceeded = 'header-fields' | 'header-field-size' | 'line-length' | 'mime-nesting';

/** The reply text (after `552 `) naming the bound a message went past. */
export function boundReplyText(bound: BoundExceeded): string {
  switch (bound) {
    case 'header-fields':
      return `5.3.4 Too many header fields: at most ${MAX_HEADER_FIELDS} in a header section`;
    case 'header-field-size':
      return `5.3.4 A header field is too long: at most ${MAX_HEADER_FIELD_BYTES} bytes unfolded`;
    case 'line-length':
      return `5.3.4 A line is too long: at most ${MAX_LINE_BYTES} bytes`;
    case 'mime-nesting':
      return `5.3.4 MIME parts are nested too deeply: at most ${MAX_MIME_NESTING} levels`;
  }
}

const LF = 0x0a;
const CR = 0x0d;
const DASH = 0x2d;

/** A partial line longer than this is only counted: it can be neither an accepted header line nor a delimiter line. */
const KEEP_PARTIAL_LINE = MAX_HEADER_FIELD_BYTES + 2048;

/** An open container: a multipart (its boundary) or an embedded message (null: ended by its container's boundary). */
type Container = string | null;

/**
 * Streams a message's bytes (as DATA hands them over, dot-unstuffed) through `write`, then
 * `end`: the first bound it went past, or null. Lines end at LF (CRLF or a bare LF). Multipart
 * delimiters are recognised as mailsplit does (the part's own boundary or that of any open
 * ancestor, "--" after it closing the multipart, trailing SP/HTAB allowed), so the depth
 * counted is the depth the parser would build.
 */
export class MessageBoundsScanner {
  private exceeded: BoundExceeded | null = null;
  /** Reading a header section (true) or a body. */
  private inHeader = true;
  private fields = 0;
  /** Bytes of the current header field, unfolded; -1 before the section's first field. */
  private fieldBytes = -1;
  /** The current field's value when it is one of the two the nesting depends on. */
  private field: { name: 'content-type' | 'content-transfer-encoding'; value: string } | null = null;
  private contentType = '';
  private transferEncoding = '';
  private readonly open: Container[] = [];
  /** The start of a line the previous chunk did not finish (kept only while it may matter), and its length. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private partialLast = 0;

  /** The bound gone past so far (a refused message's rest need not be written). */
  get result(): BoundExceeded | null {
    return this.exceeded;
  }

  write(chunk: Buffer): void {
    let start = 0;
    while (this.exceeded === null && start < chunk.length) {
      const lf = chunk.indexOf(LF, start);
      if (lf < 0) {
        this.keepPartial(chunk.subarray(start));
        return;
      }
      const cr = lf > start ? chunk[lf - 1] === CR : this.partialBytes > 0 && this.partialLast === CR;
      if (this.partialBytes > 0) {
        const bytes = this.partialBytes + lf - start;
        const kept = this.partial.length > 0 ? Buffer.concat([...this.partial, chunk.subarray(start, lf)]) : null;
        this.partial = [];
        this.partialBytes = 0;
        this.line(kept, cr ? bytes - 1 : bytes);
      } else {
        this.line(chunk.subarray(start, lf), cr ? lf - start - 1 : lf - start);
      }
      start = lf + 1;
    }
  }

  end(): BoundExceeded | null {
    if (this.exceeded === null && this.partialBytes > 0) {
      const kept = this.partial.length > 0 ? Buffer.concat(this.partial) : null;
      this.line(kept, this.partialLast === CR ? this.partialBytes - 1 : this.partialBytes);
    }
    this.partial = [];
    return this.exceeded;
  }

  private keepPartial(piece: Buffer): void {
    this.partialBytes += piece.length;
    this.partialLast = piece[piece.length - 1];
    // One more for a CR the next chunk's LF may follow.
    if (this.partialBytes > MAX_LINE_BYTES + 1) {
      this.exceeded = 'line-length';
      return;
    }
    // Copied: the chunk's memory may be reused once this write returns.
    if (this.partialBytes <= KEEP_PARTIAL_LINE) this.partial.push(Buffer.from(piece));
    else this.partial = [];
  }

  /** One line of `bytes` without its line ending; `content` (which may still hold the CR) is null when it was too long to keep. */
  private line(content: Buffer | null, bytes: number): void {
    if (bytes > MAX_LINE_BYTES) {
      this.exceeded = 'line-length';
      return;
    }
    const text = content ? content.subarray(0, bytes) : null;
    // A delimiter ends whatever it finds: a header section, a body, inner multiparts left open.
    if (text && this.open.length > 0 && bytes >= 2 && text[0] === DASH && text[1] === DASH && this.delimiter(text)) return;
    if (this.inHeader) this.headerLine(text, bytes);
  }

  private headerLine(text: Buffer | null, bytes: number): void {
    if (bytes === 0) {
      this.endHeader();
      return;
    }
    const first = text ? text[0] : 0;
    if ((first === 0x20 || first === 0x09) && this.fieldBytes >= 0) {
      this.fieldBytes += bytes;
      if (this.field && text) this.field.value += text.toString('latin1');
    } else {
      this.finishField();
      this.fields += 1;
      if (this.fields > MAX_HEADER_FIELDS) {
        this.exceeded = 'header-fields';
        return;
      }
      this.fieldBytes = bytes;
      const colon = text ? text.indexOf(0x3a) : -1;
      const name = colon > 0 && text ? text.subarray(0, colon).toString('latin1').trim().toLowerCase() : '';
      this.field = name === 'content-type' || name === 'content-transfer-encoding' ? { name, value: text!.subarray(colon + 1).toString('latin1') } : null;
    }
    if (this.fieldBytes > MAX_HEADER_FIELD_BYTES) this.exceeded = 'header-field-size';
  }

  private finishField(): void {
    if (this.field?.name === 'content-type') this.contentType = this.field.value;
    else if (this.field?.name === 'content-transfer-encoding') this.transferEncoding = this.field.value.trim().toLowerCase();
    this.field = null;
  }

  /** The end of a header section: a multipart or an embedded message opens a level. */
  private endHeader(): void {
    this.finishField();
    const type = /^\s*([^;\s]+)/.exec(this.contentType)?.[1]?.toLowerCase() ?? '';
    const boundary = type.startsWith('multipart/') ? boundaryOf(this.contentType) : null;
    // An embedded message is parsed as one only when not encoded (as mailsplit and Postfix do).
    const embedded = type === 'message/rfc822' && ['', '7bit', '8bit', 'binary'].includes(this.transferEncoding);
    this.fields = 0;
    this.fieldBytes = -1;
    this.contentType = '';
    this.transferEncoding = '';
    if (boundary !== null || embedded) {
      this.open.push(boundary);
      if (this.open.length > MAX_MIME_NESTING) {
        this.exceeded = 'mime-nesting';
        return;
      }
    }
    // An embedded message starts with its own header section.
    this.inHeader = boundary === null && embedded;
  }

  /** True when the line is a delimiter of an open multipart (and acts on it). */
  private delimiter(text: Buffer): boolean {
    let end = text.length;
    while (end > 2 && (text[end - 1] === 0x20 || text[end - 1] === 0x09)) end--;
    const value = text.subarray(2, end).toString('latin1');
    for (let i = this.open.length - 1; i >= 0; i--) {
      const boundary = this.open[i];
      if (boundary === null) continue;
      if (value === boundary) {
        // The next part of that multipart: everything opened inside its previous part is over.
        this.open.length = i + 1;
        this.startSection(true);
        return true;
      }
      if (value === `${boundary}--`) {
        this.open.length = i;
        this.startSection(false);
        return true;
      }
    }
    return false;
  }

  private startSection(header: boolean): void {
    this.inHeader = header;
    this.field = null;
    this.fields = 0;
    this.fieldBytes = -1;
    this.contentType = '';
    this.transferEncoding = '';
  }
}

/** The boundary parameter of a Content-Type value (quoted or not, RFC 2231 continuations joined); null without one. */
function boundaryOf(contentType: string): string | null {
  const params = new Map<string, string>();
  const re = /;\s*([^=\s;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/g;
  for (let m = re.exec(contentType); m; m = re.exec(contentType)) {
    params.set(m[1].toLowerCase(), m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]);
  }
  const plain = params.get('boundary');
  if (plain) return plain;
  const parts: string[] = [];
  for (let i = 0; params.has(`boundary*${i}`) || params.has(`boundary*${i}*`); i++) {
    const part = params.get(`boundary*${i}`) ?? params.get(`boundary*${i}*`) ?? '';
    parts.push(params.has(`boundary*${i}*`) ? decodeExtended(part, i === 0) : part);
  }
  if (parts.length > 0) return parts.join('');
  const extended = params.get('boundary*');
  return extended ? decodeExtended(extended, true) : null;
}

/** An RFC 2231 extended value: %XX escapes, and on the first part a `charset'language'` prefix. */
function decodeExtended(value: string, first: boolean): string {
  const text = first ? value.replace(/^[^']*'[^']*'/, '') : value;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
