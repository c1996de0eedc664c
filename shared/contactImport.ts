/**
 * The rules of a contacts CSV (contract section 5) that the API's import and the dashboard's
 * column preview both apply, written once: which column is the address, which the subscription,
 * which become data keys (and which of those the data rules drop), and how a cell is typed. The
 * API reads whole files with csv-parse (services/contacts/csvImport.ts); the dashboard reads the
 * first rows of the chosen file with `previewCsv` below, before anything is uploaded.
 * Browser-safe like all of shared/: zod only.
 */
import { z } from 'zod';

/** Data keys the contact data rules drop silently (a column of that name imports nothing). */
export const RESERVED_DATA_KEYS: ReadonlySet<string> = new Set(['id', 'mailroom_id', 'mailroom_email', 'email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl']);

export const MAX_CSV_COLUMN_NAME_LENGTH = 100;

/** The header row as the import reads it: its column names, trimmed, and where the two standard columns are (-1: absent). */
export interface CsvHeader {
  columns: string[];
  emailIndex: number;
  subscribedIndex: number;
}

/**
 * The header row's rules: an `email` column (letter case ignored), every column named, none twice,
 * names of at most 100 characters. Answers the header, or why the file cannot be imported.
 */
export function checkCsvHeader(record: readonly string[]): { header: CsvHeader } | { error: string } {
  const columns = record.map((h) => h.trim());
  if (columns.some((h) => h.includes('\u0000'))) {
    return { error: 'The header row contains NUL characters; save the file as UTF-8 CSV (not UTF-16)' };
  }
  const emailIndex = columns.findIndex((h) => h.toLowerCase() === 'email');
  if (emailIndex < 0) return { error: 'The CSV has no "email" column in its header row' };
  const seen = new Set<string>();
  for (const h of columns) {
    if (!h) return { error: 'Every column of the header row needs a name' };
    if (h.length > MAX_CSV_COLUMN_NAME_LENGTH) return { error: `Column names are at most ${MAX_CSV_COLUMN_NAME_LENGTH} characters: "${h.slice(0, 40)}…"` };
    if (seen.has(h.toLowerCase())) return { error: `The column "${h}" appears twice in the header row` };
    seen.add(h.toLowerCase());
  }
  return { header: { columns, emailIndex, subscribedIndex: columns.findIndex((h) => h.toLowerCase() === 'subscribed') } };
}

const SUBSCRIBED_TRUE = new Set(['true', '1', 'yes', 'y']);
const SUBSCRIBED_FALSE = new Set(['false', '0', 'no', 'n']);

/** A `subscribed` cell: true, false, undefined when empty (the contact's subscription is kept), or 'invalid'. */
export function subscribedCell(cell: string | undefined): boolean | undefined | 'invalid' {
  if (!cell) return undefined;
  const value = cell.toLowerCase();
  if (SUBSCRIBED_TRUE.has(value)) return true;
  if (SUBSCRIBED_FALSE.has(value)) return false;
  return 'invalid';
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A data cell as it is stored: numbers (not ones with a leading zero, such as postcodes, nor ones
 * too long to keep exactly) and true/false typed as such, ISO dates as ISO instants, the rest as text.
 */
export function typedCell(value: string): string | number | boolean {
  if (/^-?\d+(\.\d+)?$/.test(value) && value.length < 16 && !/^-?0\d/.test(value)) return Number(value);
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (ISO_DATE.test(value) && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  return value;
}

/** What one column of the file becomes on the contacts. */
export type ColumnTarget =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'data'; key: string }
  /** A data key the data rules drop (`id`, `unsubscribeUrl`, …): the column imports nothing. */
  | { kind: 'ignored'; key: string; reason: string };

export type CellType = 'text' | 'number' | 'boolean' | 'date';

export interface ColumnMapping {
  /** The column's name in the header row, trimmed. */
  header: string;
  target: ColumnTarget;
  /** The non-empty cells of the previewed rows, as they are in the file. */
  samples: string[];
  /** What a data column's previewed cells are stored as ('text' when they differ or none is filled). */
  type: CellType;
  /** Previewed cells that the import would refuse (a bad address, a bad subscribed value), with their row numbers (the header is row 1). */
  problems: { row: number; message: string }[];
}

export interface ImportMapping {
  columns: ColumnMapping[];
  /** Why the file cannot be imported at all (its header row), as the API would say; the columns are then empty. */
  error?: string;
}

/** An address cell, as the import checks it (stored lower-cased). */
export const csvEmailCell = z.string().trim().max(254).email();

function cellType(value: string): CellType {
  const typed = typedCell(value);
  if (typeof typed === 'number') return 'number';
  if (typeof typed === 'boolean') return 'boolean';
  return typed !== value ? 'date' : 'text';
}

/**
 * What each column of a CSV maps to (the address, the subscription, a data key, or nothing), with
 * the previewed cells and their type: the dashboard shows it before the file is imported. `rows`
 * are the first data rows, as `previewCsv` reads them.
 */
export function importMapping(headerRow: readonly string[], rows: readonly (readonly string[])[]): ImportMapping {
  const checked = checkCsvHeader(headerRow);
  if ('error' in checked) return { columns: [], error: checked.error };
  const { header } = checked;
  const columns = header.columns.map((name, index): ColumnMapping => {
    const target: ColumnTarget =
      index === header.emailIndex
        ? { kind: 'email' }
        : index === header.subscribedIndex
          ? { kind: 'subscribed' }
          : RESERVED_DATA_KEYS.has(name)
            ? { kind: 'ignored', key: name, reason: `"${name}" is reserved by Mailroom` }
            : { kind: 'data', key: name };
    const samples: string[] = [];
    const problems: ColumnMapping['problems'] = [];
    rows.forEach((cells, i) => {
      const cell = cells[index] ?? '';
      const row = i + 2;
      if (target.kind === 'email' && !csvEmailCell.safeParse(cell).success) problems.push({ row, message: cell ? 'Invalid email address' : 'Missing email' });
      if (target.kind === 'subscribed' && subscribedCell(cell) === 'invalid') {
        problems.push({ row, message: `subscribed must be true/false/1/0/yes/no, not "${cell.slice(0, 20)}"` });
      }
      if (cell) samples.push(cell);
    });
    const types = new Set(samples.map(cellType));
    const type: CellType = target.kind === 'data' && types.size === 1 ? [...types][0] : 'text';
    return { header: name, target, samples, type, problems };
  });
  return { columns };
}

/** The first records of a CSV text, read by the import's rules (a byte-order mark skipped, empty lines skipped, cells trimmed outside quotes). */
export interface CsvPreview {
  /** The header row (empty for an empty file). */
  header: string[];
  /** Up to `maxRows` data rows. */
  rows: string[][];
  /** Whether the text holds more data rows than were read. */
  more: boolean;
  /** A quoting error (a quote never closed), when the text read had one. */
  error?: string;
}

/**
 * Reads the header and the first `maxRows` data rows of CSV text (RFC 4180: commas, double quotes
 * with "" inside, CRLF or LF). `complete` says whether `text` is the whole file; when it is only
 * the file's beginning, a record cut at its end is not shown, and an open quote there is no error.
 */
export function previewCsv(text: string, maxRows: number, complete = true): CsvPreview {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  let wasQuoted = false;
  let wasQuotedRecord = false;
  let at = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  // Records that end at a line break; a last one without a break is added after the loop if the text is complete.
  const endCell = () => {
    record.push(wasQuoted ? cell : cell.trim());
    cell = '';
    wasQuoted = false;
  };
  const endRecord = () => {
    endCell();
    if (!(record.length === 1 && record[0] === '' && !wasQuotedRecord)) records.push(record);
    record = [];
    wasQuotedRecord = false;
  };
  for (; at < text.length && records.length <= maxRows + 1; at++) {
    const char = text[at];
    if (quoted) {
      if (char === '"') {
        if (text[at + 1] === '"') {
          cell += '"';
          at++;
        } else quoted = false;
      } else cell += char;
    } else if (char === '"' && cell.trim() === '' && !wasQuoted) {
      quoted = true;
      wasQuoted = true;
      wasQuotedRecord = true;
      cell = '';
    } else if (char === ',') endCell();
    else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[at + 1] === '\n') at++;
      endRecord();
    } else if (!wasQuoted) cell += char;
  }
  const stoppedEarly = at < text.length;
  let error: string | undefined;
  if (!stoppedEarly && complete) {
    if (quoted) error = 'A quoted cell is never closed';
    else if (cell !== '' || record.length > 0 || wasQuoted) endRecord();
  }
  const [header = [], ...rows] = records;
  return { header, rows: rows.slice(0, maxRows), more: rows.length > maxRows || stoppedEarly || !complete, ...(error ? { error } : {}) };
}
