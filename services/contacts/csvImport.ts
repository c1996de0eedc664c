import { pipeline } from 'node:stream/promises';
import { Readable, pipeline as streamPipeline } from 'node:stream';
import { CsvError, parse, type Options as CsvParseOptions } from 'csv-parse';
import { setOwn, splitDataChanges } from './contactDataRules';
import { checkCsvHeader, csvEmailCell, subscribedCell, typedCell, type CsvHeader } from '../../shared/contactImport';
import type { ContactUpsert } from '../../db/contacts/contactRepository';
import type { JobError } from '../../db/jobs/jobRepository';

/**
 * Reading a contacts CSV (contract section 5): UTF-8 with a header row; `email` required;
 * `subscribed` (true/false/1/0/yes/no) honoured; every other column becomes `data.<column>`,
 * with numbers, booleans and ISO dates typed as such and empty cells ignored. Files are read as
 * streams, a chunk at a time: the upload endpoint reads the whole file once to refuse a broken
 * one at once (checkCsvUpload), and the import activity reads it again to do the work
 * (readCsvRecords). Both parse with the same options, so a file the upload accepted imports.
 */
export class CsvFileError extends Error {}

export type { CsvHeader };

const csvParseOptions: CsvParseOptions = { bom: true, skip_empty_lines: true, relax_column_count: true, trim: true };

/** The header row's rules (shared/contactImport.ts, which the dashboard's column preview applies too). */
export function readCsvHeader(record: string[]): CsvHeader {
  const checked = checkCsvHeader(record);
  if ('error' in checked) throw new CsvFileError(checked.error);
  return checked.header;
}

/** About a millisecond of csv-parse's work on a quiet machine. */
const PARSE_SLICE_BYTES = 16 * 1024;

const notUtf8 = () => new CsvFileError('The file is not UTF-8 text; upload a CSV file saved as UTF-8');

function asCsvFileError(err: unknown): unknown {
  return err instanceof CsvError ? new CsvFileError(`The CSV could not be read: ${err.message}`) : err;
}

/**
 * Reads an uploaded file once, as it streams in, handing each piece to `store` after it passed
 * the byte-level check (UTF-8) and before it is parsed, and answers the header and the number of
 * data rows (what the job's `total` is). Throws CsvFileError for a file that cannot be imported
 * (not UTF-8, broken quoting, no or a bad header row); any error of `file` or `store` passes
 * through. Only the piece being read and the parser's current record are in memory.
 */
export async function checkCsvUpload(file: Readable, store: (piece: Buffer) => Promise<void>): Promise<{ header: CsvHeader; rows: number }> {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let header: CsvHeader | undefined;
  let rows = 0;
  try {
    await pipeline(
      file,
      async function* checkAndStore(pieces: AsyncIterable<Buffer>) {
        for await (const piece of pieces) {
          try {
            utf8.decode(piece, { stream: true });
          } catch {
            throw notUtf8();
          }
          await store(piece);
          // Parsed a slice at a time with a turn of the event loop between slices, so that
          // requests beside several big uploads wait for a few milliseconds of parsing, not for
          // a whole socket read's worth of each upload.
          for (let at = 0; at < piece.length; at += PARSE_SLICE_BYTES) {
            if (at > 0) await new Promise((resolve) => setImmediate(resolve));
            yield piece.subarray(at, at + PARSE_SLICE_BYTES);
          }
        }
        try {
          utf8.decode();
        } catch {
          throw notUtf8();
        }
      },
      parse(csvParseOptions),
      async function count(records: AsyncIterable<string[]>) {
        for await (const record of records) {
          if (header) rows++;
          else header = readCsvHeader(record);
        }
      },
    );
  } catch (err) {
    throw asCsvFileError(err);
  }
  if (!header) throw new CsvFileError('The CSV is empty; it needs a header row with an "email" column');
  return { header, rows };
}

/**
 * The data rows of a stored file, in order, read from `chunks` as they are needed: `rowNumber`
 * counts the header as row 1. Throws CsvFileError where the file cannot be read (which the
 * upload check makes rare: only a file stored before that check existed).
 */
export async function* readCsvRecords(chunks: AsyncIterable<Buffer>): AsyncGenerator<{ header: CsvHeader; cells: string[]; rowNumber: number }> {
  const parser = parse(csvParseOptions);
  // One chunk read ahead at most, so memory stays at a chunk and a few records. A failed read
  // destroys the parser with its error, which the loop below throws; the callback has nothing to add.
  streamPipeline(Readable.from(chunks, { highWaterMark: 1 }), parser, () => undefined);
  let header: CsvHeader | undefined;
  let rowNumber = 1;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!header) header = readCsvHeader(record);
      else yield { header, cells: record, rowNumber: ++rowNumber };
    }
  } catch (err) {
    throw asCsvFileError(err);
  } finally {
    parser.destroy();
  }
}

/** Turns one data row into a contact write, or the reason it cannot be one. `rowNumber` counts the header as row 1. */
export function csvRowToUpsert(csv: CsvHeader, cells: string[], rowNumber: number): { upsert: ContactUpsert } | { error: JobError } {
  if (cells.length > csv.columns.length) {
    return { error: { row: rowNumber, error: `Row has ${cells.length} cells but the header has ${csv.columns.length} columns` } };
  }
  // PostgreSQL text cannot hold NUL; such a row is reported, never sent to the database.
  if (cells.some((cell) => cell.includes('\u0000'))) {
    const email = csvEmailCell.safeParse(cells[csv.emailIndex] ?? '');
    return {
      error: { row: rowNumber, email: email.success ? email.data.toLowerCase() : undefined, error: 'The row contains a NUL character, which cannot be stored' },
    };
  }
  const rawEmail = cells[csv.emailIndex] ?? '';
  const email = csvEmailCell.safeParse(rawEmail);
  if (!email.success)
    return { error: { row: rowNumber, email: rawEmail.slice(0, 254) || undefined, error: rawEmail ? 'Invalid email address' : 'Missing email' } };
  const subscribed = csv.subscribedIndex >= 0 ? subscribedCell(cells[csv.subscribedIndex]) : undefined;
  if (subscribed === 'invalid') {
    return {
      error: {
        row: rowNumber,
        email: email.data.toLowerCase(),
        error: `subscribed must be true/false/1/0/yes/no, not "${cells[csv.subscribedIndex].slice(0, 20)}"`,
      },
    };
  }
  const data: Record<string, unknown> = {};
  csv.columns.forEach((column, i) => {
    if (i === csv.emailIndex || i === csv.subscribedIndex) return;
    const cell = cells[i];
    if (cell) setOwn(data, column, typedCell(cell));
  });
  return {
    upsert: {
      email: email.data.toLowerCase(),
      subscribedIfNew: subscribed ?? true,
      subscribedIfExisting: subscribed,
      data: splitDataChanges(data),
    },
  };
}
