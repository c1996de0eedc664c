import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { AppContext } from '../state';
import { ApiError, badRequest } from '../../lib/errors';
import { contentEncodings, decodedBodyStream } from './bodyDecoding';

/** Room for the multipart framing and a few small fields around the file, in a Content-Length check. */
const FORM_OVERHEAD_BYTES = 1024 * 1024;

export interface MultipartFileOptions {
  /** The form field holding the file. */
  field: string;
  maxBytes: number;
  /** The error to answer beyond maxBytes (a 413 for CSV imports). */
  tooLarge: () => ApiError;
  /**
   * When set, a request carrying more than one file is refused with this error, and the result
   * is given only once the whole form has been read (so the caller stores nothing before it
   * knows there was exactly one file). Unset: files after the first are skipped.
   */
  extraFiles?: () => ApiError;
}

/**
 * Streams one file of a multipart/form-data request to `consume` as it arrives: nothing is
 * buffered whole or written to disk, and the request is read only as fast as `consume` reads the
 * file (so a slow consumer holds the client back rather than filling memory). A file growing past
 * `maxBytes` fails `consume`'s stream with `tooLarge()`; a request whose Content-Length already
 * says so is refused before it is read. A body sent with a Content-Encoding (gzip, deflate, br)
 * is decoded on the way in, under the same limit after decoding (bodyDecoding). Whatever fails,
 * the rest of the request is read and dropped, so the client gets the answer instead of a reset
 * connection.
 */
export async function consumeMultipartFile<T>(
  ctx: AppContext,
  options: MultipartFileOptions,
  consume: (file: Readable, info: { filename: string | null }) => Promise<T>,
): Promise<T> {
  const req = ctx.req;
  const drain = () => {
    req.unpipe();
    req.resume();
  };
  if (Number(req.headers['content-length'] ?? 0) > options.maxBytes + FORM_OVERHEAD_BYTES) {
    drain();
    throw options.tooLarge();
  }
  let body: Readable = req;
  try {
    if (contentEncodings(req).length) body = decodedBodyStream(req, options.maxBytes + FORM_OVERHEAD_BYTES);
  } catch (err) {
    drain();
    throw err;
  }
  let form: busboy.Busboy;
  try {
    // busboy reports 'limit' on reaching fileSize, so one byte more than allowed is the limit.
    form = busboy({ headers: req.headers, limits: { fileSize: options.maxBytes + 1, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 20 } });
  } catch {
    drain();
    throw badRequest(`Upload the file as multipart/form-data in the field "${options.field}"`);
  }
  try {
    return await new Promise<T>((resolve, reject) => {
      let found = false;
      let fileStream: Readable | null = null;
      let consuming: Promise<T> | null = null;
      let extraFile = false;
      let formClosed!: () => void;
      const closed = new Promise<void>((done) => (formClosed = done));
      // A failure outside the file (the decoder, the form) answers only once the consumer has
      // settled: it is told through its stream and cleans up (a half-stored upload is discarded)
      // before the caller's error handler answers.
      const fail = (err: unknown) => {
        if (fileStream && !fileStream.destroyed) fileStream.destroy(err as Error);
        if (consuming)
          consuming.then(
            () => reject(err),
            () => reject(err),
          );
        else reject(err);
      };
      form.on('file', (name, file, info) => {
        if (found || name !== options.field) {
          file.resume();
          return;
        }
        found = true;
        fileStream = file;
        file.on('limit', () => file.destroy(options.tooLarge()));
        const consumed = consume(file, { filename: info.filename || null });
        consuming = consumed;
        const refuse = options.extraFiles;
        if (!refuse) {
          consumed.then(resolve, reject);
          return;
        }
        consumed.catch(reject);
        Promise.all([consumed, closed]).then(
          ([value]) => (extraFile ? reject(refuse()) : resolve(value)),
          () => undefined,
        );
      });
      // busboy skips every file past limits.files and says so once; when that is refused, the
      // answer need not wait for the rest of the form.
      form.on('filesLimit', () => {
        extraFile = true;
        if (options.extraFiles) fail(options.extraFiles());
      });
      form.on('error', (err: Error) => fail(badRequest(`Could not read the upload: ${err.message}`)));
      form.on('close', () => {
        formClosed();
        if (!found) reject(badRequest(`Upload the file as the multipart field "${options.field}"`));
      });
      // A client that goes away mid-upload: the form (and so the file stream) ends in an error.
      req.once('close', () => {
        if (!req.complete) form.destroy(new Error('The upload was interrupted'));
      });
      // The decoder's own failures (bytes that do not decode: 400, too much after decoding: 413).
      if (body !== req) body.once('error', fail);
      body.pipe(form);
    });
  } catch (err) {
    drain();
    throw err;
  }
}
