import { RESERVED_DATA_KEYS } from '../../../shared/contactImport';

/**
 * A contact's `data` as the forms edit it: one row per key, its value as typed text and the type
 * it is saved as. Objects and arrays are edited as JSON. What the API's data rules refuse beyond
 * this (sizes, depth) comes back as its 422 and is shown on the form.
 */
export type ValueType = 'text' | 'number' | 'boolean' | 'json';

export interface DataRow {
  key: string;
  value: string;
  type: ValueType;
}

export const VALUE_TYPE_OPTIONS: readonly { value: ValueType; label: string }[] = [
  { value: 'text', label: 'Text' },
  { value: 'number', label: 'Number' },
  { value: 'boolean', label: 'Yes / no' },
  { value: 'json', label: 'JSON' },
];

/** Sets a key whatever its name (plain assignment of `__proto__` would change the object's prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export function rowsFromData(data: Record<string, unknown>): DataRow[] {
  return Object.entries(data).map(([key, value]) => {
    if (typeof value === 'number') return { key, value: String(value), type: 'number' };
    if (typeof value === 'boolean') return { key, value: String(value), type: 'boolean' };
    if (typeof value === 'string') return { key, value, type: 'text' };
    return { key, value: JSON.stringify(value), type: 'json' };
  });
}

export interface RowError {
  index: number;
  field: 'key' | 'value';
  message: string;
}

function rowValue(row: DataRow): { value: unknown } | { error: string } {
  const text = row.value.trim();
  switch (row.type) {
    case 'text':
      return { value: row.value };
    case 'number': {
      const number = Number(text);
      return text !== '' && Number.isFinite(number) ? { value: number } : { error: 'Must be a number' };
    }
    case 'boolean':
      return text === 'true' || text === 'false' ? { value: text === 'true' } : { error: 'Must be true or false' };
    case 'json':
      try {
        return { value: JSON.parse(text) as unknown };
      } catch {
        return { error: 'Must be valid JSON' };
      }
  }
}

/**
 * The rows as a `data` object, or what is wrong with them. With `original` (editing a contact),
 * a key that is gone or emptied is sent as null (the data rules delete it) and unchanged keys are
 * left out; without it (a new contact), empty rows are skipped.
 */
export function dataFromRows(rows: readonly DataRow[], original?: Record<string, unknown>): { data: Record<string, unknown> } | { errors: RowError[] } {
  const data: Record<string, unknown> = {};
  const errors: RowError[] = [];
  const seen = new Set<string>();
  rows.forEach((row, index) => {
    const key = row.key.trim();
    if (!key && row.value === '') return;
    if (!key) errors.push({ index, field: 'key', message: 'Give the field a key' });
    else if (key.length > 100) errors.push({ index, field: 'key', message: 'Keys are at most 100 characters' });
    else if (RESERVED_DATA_KEYS.has(key)) errors.push({ index, field: 'key', message: `"${key}" is reserved by Mailroom` });
    else if (seen.has(key)) errors.push({ index, field: 'key', message: 'This key is already used above' });
    if (!key || errors.some((e) => e.index === index)) return;
    seen.add(key);
    if (row.value === '' && row.type !== 'json') {
      // An empty value means "no such field": removed when editing, skipped when creating.
      if (original && Object.hasOwn(original, key)) setOwn(data, key, null);
      return;
    }
    const parsed = rowValue(row);
    if ('error' in parsed) {
      errors.push({ index, field: 'value', message: parsed.error });
      return;
    }
    if (original && Object.hasOwn(original, key) && JSON.stringify(original[key]) === JSON.stringify(parsed.value)) return;
    setOwn(data, key, parsed.value);
  });
  if (errors.length > 0) return { errors };
  if (original) {
    for (const key of Object.keys(original)) if (!seen.has(key)) setOwn(data, key, null);
  }
  return { data };
}

/** A stored value as the contact page shows it. */
export function displayValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return JSON.stringify(value);
}
