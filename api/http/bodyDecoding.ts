import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';
import { Transform, type Readable } from 'node:stream';
import { ApiError, payloadTooLarge } from '../../lib/errors';

/**
 * Reading a request body as its sender encoded it (`Content-Encoding`). Proxies and SDKs send
 * gzip, deflate and br bodies; all three are decoded, and the size limit applies to the decoded
 * bytes, counted while inflating, so a small compressed "bomb" is cut off at the limit instead of
 * filling memory. Any body reader (the JSON parser, an upload handler) goes through here:
 *
 * - an encoding other than identity, gzip (x-gzip), deflate or br: 415;
 * - bytes that do not decode as the named encoding: 400 INVALID_REQUEST_BODY;
 * - more than `limitBytes` after decoding (or on the wire): 413, as soon as the limit is passed.
 */
export const SUPPORTED_CONTENT_ENCODINGS = ['identity', 'gzip', 'x-gzip', 'deflate', 'br'] as const;

/** A sender may stack encodings (`gzip, br`); more than this is not a real client. */
const MAX_STACKED_ENCODINGS = 2;

export const unsupportedEncoding = (encoding: string) =>
  new ApiError(415, 'BAD_REQUEST', `Unsupported Content-Encoding "${encoding.slice(0, 40)}": send identity, gzip, deflate or br`, {
    details: { supported: ['identity', 'gzip', 'deflate', 'br'] },
  });

const undecodable = (encoding: string) => new ApiError(400, 'INVALID_REQUEST_BODY', `The request body could not be decoded as ${encoding} (Content-Encoding)`);

const bodyTooLarge = (limitBytes: number) => payloadTooLarge(`Request body is too large: at most ${formatBytes(limitBytes)} after decoding`);

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MB` : n % 1024 === 0 ? `${n / 1024} KB` : `${n} bytes`;
}

/**
 * The codings named by the request's Content-Encoding, in the order they were applied.
 * Throws 415 for one that is not supported.
 */
export function contentEncodings(req: IncomingMessage): string[] {
  const header = req.headers['content-encoding'];
  if (!header) return [];
  const codings = header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity');
  for (const coding of codings) {
    if (!(SUPPORTED_CONTENT_ENCODINGS as readonly string[]).includes(coding)) throw unsupportedEncoding(coding);
  }
  if (codings.length > MAX_STACKED_ENCODINGS) throw unsupportedEncoding(header);
  return codings;
}

function decoderFor(coding: string): Transform {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      throw unsupportedEncoding(coding);
  }
}

/** Passes bytes through, failing with 413 as soon as more than `limitBytes` went by. */
function byteLimit(limitBytes: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > limitBytes) callback(bodyTooLarge(limitBytes));
      else callback(null, chunk);
    },
  });
}

/**
 * The request body as a stream of decoded bytes, limited to `limitBytes` both on the wire and
 * after decoding. Errors on the returned stream are ApiErrors (400, 413). Throws 415 at once for
 * an unsupported encoding, and 413 when Content-Length alone is already over the limit.
 *
 * On an error, the request stops being read through the decoders and what the client still
 * sends is discarded, so the error answer still reaches it (destroying the request would reset
 * the connection before the client reads the answer).
 */
export function decodedBodyStream(req: IncomingMessage, limitBytes: number): Readable {
  const codings = contentEncodings(req);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) throw bodyTooLarge(limitBytes);

  // wire limit → decoders (last applied, first undone) → decoded limit
  const stages: Array<{ stream: Transform; fail: (err: Error) => ApiError }> = [
    { stream: byteLimit(limitBytes), fail: (err) => asApiError(err, 'identity') },
    ...[...codings].reverse().map((coding) => ({ stream: decoderFor(coding), fail: (err: Error) => asApiError(err, coding) })),
  ];
  if (codings.length) stages.push({ stream: byteLimit(limitBytes), fail: (err) => asApiError(err, 'identity') });
  const output = stages[stages.length - 1].stream;

  let settled = false;
  const fail = (err: ApiError) => {
    if (settled) return;
    settled = true;
    req.unpipe(stages[0].stream);
    for (const stage of stages) stage.stream.unpipe();
    // Keep reading and discarding what the client still sends, then let the answer go out.
    req.resume();
    for (const stage of stages) if (stage.stream !== output) stage.stream.destroy();
    output.destroy(err);
  };
  // A client that goes away mid-body; once the body is read, the request is no longer ours to watch.
  const cutOff = () => fail(new ApiError(400, 'INVALID_REQUEST_BODY', 'The request body was not received completely'));
  req.once('aborted', cutOff);
  req.once('error', cutOff);
  output.once('close', () => {
    settled = true;
    req.off('aborted', cutOff);
    req.off('error', cutOff);
  });

  let upstream: Readable = req;
  for (const stage of stages) {
    stage.stream.on('error', (err) => fail(stage.fail(err)));
    upstream = upstream.pipe(stage.stream);
  }
  return output;
}

function asApiError(err: Error, coding: string): ApiError {
  return err instanceof ApiError ? err : undecodable(coding);
}

/** The whole decoded body (see decodedBodyStream), refused past `limitBytes`. */
export async function readDecodedBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of decodedBodyStream(req, limitBytes)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
