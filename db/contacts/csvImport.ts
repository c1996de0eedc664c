import { parse } from 'csv-parse/sync';
import { z } from 'zod';
import { setOwn, splitDataChanges } from './contactDataRules';
import type { ContactUpsert } from './contactRepository';
import type { JobError } from '../jobs/jobRepository';

/**
 * Reading a contacts CSV (contract section 5): UTF-8 with a header row; `email` required;
 * `subscribed` (true/false/1/0/yes/no) honoured; every other column becomes `data.<column>`,
 * with numbers, booleans and ISO dates typed as such and empty cells ignored. Used by the upload
 * endpoint (to refuse a broken file at once) and by the import activity (to do the work).
 */
export class CsvFileError extends Error {}

export interface ParsedCsv {
  header: string[];
  emailIndex: number;
  subscribedIndex: number;
  /** Data rows, without the header. */
  rows: string[][];
}

const emailSchema = z.string().trim().max(254).email();
const truthy = new Set(['true', '1', 'yes', 'y']);
const falsy = new Set(['false', '0', 'no', 'n']);
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export function parseContactsCsv(content: Buffer): ParsedCsv {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(content);
  } catch {
    throw new CsvFileError('The file is not UTF-8 text; upload a CSV file saved as UTF-8');
  }
  if (text.includes('\u0000')) throw new CsvFileError('The file is not a CSV file (it contains binary data)');
  let records: string[][];
  try {
    records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true, trim: true });
  } catch (err) {
    throw new CsvFileError(`The CSV could not be read: ${(err as Error).message}`);
  }
  if (!records.length) throw new CsvFileError('The CSV is empty; it needs a header row with an "email" column');
  const header = records[0].map((h) => h.trim());
  const emailIndex = header.findIndex((h) => h.toLowerCase() === 'email');
  if (emailIndex < 0) throw new CsvFileError('The CSV has no "email" column in its header row');
  const seen = new Set<string>();
  for (const h of header) {
    if (!h) throw new CsvFileError('Every column of the header row needs a name');
    if (h.length > 100) throw new CsvFileError(`Column names are at most 100 characters: "${h.slice(0, 40)}…"`);
    if (seen.has(h.toLowerCase())) throw new CsvFileError(`The column "${h}" appears twice in the header row`);
    seen.add(h.toLowerCase());
  }
  const subscribedIndex = header.findIndex((h) => h.toLowerCase() === 'subscribed');
  return { header, emailIndex, subscribedIndex, rows: records.slice(1) };
}

function typedCell(value: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(value) && value.length < 16 && !/^-?0\d/.test(value)) return Number(value);
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (ISO_DATE.test(value) && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  return value;
}

/** Turns one data row into a contact write, or the reason it cannot be one. `rowNumber` counts the header as row 1. */
export function csvRowToUpsert(csv: ParsedCsv, cells: string[], rowNumber: number): { upsert: ContactUpsert } | { error: JobError } {
  if (cells.length > csv.header.length) {
    return { error: { row: rowNumber, error: `Row has ${cells.length} cells but the header has ${csv.header.length} columns` } };
  }
  const rawEmail = cells[csv.emailIndex] ?? '';
  const email = emailSchema.safeParse(rawEmail);
  if (!email.success) return { error: { row: rowNumber, email: rawEmail.slice(0, 254) || undefined, error: rawEmail ? 'Invalid email address' : 'Missing email' } };
  let subscribed: boolean | undefined;
  if (csv.subscribedIndex >= 0 && cells[csv.subscribedIndex]) {
    const value = cells[csv.subscribedIndex].toLowerCase();
    if (truthy.has(value)) subscribed = true;
    else if (falsy.has(value)) subscribed = false;
    else return { error: { row: rowNumber, email: email.data.toLowerCase(), error: `subscribed must be true/false/1/0/yes/no, not "${cells[csv.subscribedIndex].slice(0, 20)}"` } };
  }
  const data: Record<string, unknown> = {};
  csv.header.forEach((column, i) => {
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
