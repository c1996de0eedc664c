import { z } from 'zod';
import { findJsonProblem } from '../../lib/untrustedJson';
import { setOwn } from '../../lib/ownProperty';
import { RESERVED_DATA_KEYS } from '../../shared/contactImport';

export { setOwn, RESERVED_DATA_KEYS };

/**
 * The contact `data` rules (specification "Rules for data values", contract section 5), written
 * once and used by contact writes, track, import, send and workflow steps alike:
 *
 * - a primitive (string, number, boolean) is saved;
 * - `null` deletes the key from the contact;
 * - `""` is ignored (never overwrites);
 * - `{ value, persistent: false }` is used for this request only (one-shot), `{ value, persistent: true }` saves `value`;
 * - other plain objects and arrays are saved as they are;
 * - reserved keys are silently dropped;
 * - values nest at most MAX_JSON_DEPTH levels, and text holds no NUL or unpaired surrogate
 *   (lib/untrustedJson.ts).
 */
// RESERVED_DATA_KEYS (dropped silently) lives in shared/contactImport.ts: the dashboard's import preview names them too.

export const MAX_DATA_KEYS = 100;
export const MAX_DATA_KEY_LENGTH = 100;
export const MAX_DATA_BYTES = 64 * 1024;

export interface DataChanges {
  /** Keys to save on the contact, with their values. */
  set: Record<string, unknown>;
  /** Keys to delete from the contact. */
  unset: string[];
  /** One-shot values: available to this request's templates, never stored. */
  oneShot: Record<string, unknown>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isWrappedValue(value: Record<string, unknown>): value is { value: unknown; persistent: boolean } {
  return 'value' in value && typeof value.persistent === 'boolean' && Object.keys(value).every((k) => k === 'value' || k === 'persistent');
}

export function splitDataChanges(data: Record<string, unknown> | undefined | null): DataChanges {
  const changes: DataChanges = { set: {}, unset: [], oneShot: {} };
  if (!data) return changes;
  for (const [key, raw] of Object.entries(data)) {
    if (RESERVED_DATA_KEYS.has(key)) continue;
    if (raw === undefined || raw === '') continue;
    if (raw === null) {
      changes.unset.push(key);
      continue;
    }
    if (isPlainObject(raw) && isWrappedValue(raw)) {
      if (!raw.persistent) {
        setOwn(changes.oneShot, key, raw.value);
        continue;
      }
      // `{ value, persistent: true }` follows the same rules as a bare value.
      if (raw.value === null) changes.unset.push(key);
      else if (raw.value !== '' && raw.value !== undefined) setOwn(changes.set, key, raw.value);
      continue;
    }
    setOwn(changes.set, key, raw);
  }
  return changes;
}

/** The contact's data after the changes: what the database computes with `(data || set) - unset`. */
export function applyDataChanges(current: Record<string, unknown>, changes: DataChanges): Record<string, unknown> {
  const next = { ...current, ...changes.set };
  for (const key of changes.unset) delete next[key];
  return next;
}

/** Template variables for one request: stored data, then this request's saved and one-shot values. */
export function requestVariables(stored: Record<string, unknown>, changes: DataChanges): Record<string, unknown> {
  return { ...applyDataChanges(stored, changes), ...changes.oneShot };
}

/**
 * Why `data` as sent is unacceptable, or null. Checked before anything is written, whatever the
 * write path. The nesting bound comes first (without recursion), so measuring the size with
 * JSON.stringify is safe; text that PostgreSQL cannot store is refused naming its field.
 */
export function dataProblem(data: Record<string, unknown>): { field: string; message: string; code: string } | null {
  const json = findJsonProblem(data, { prefix: 'data' });
  if (json) return { field: json.path, message: json.message, code: json.code === 'too_deep' ? 'too_big' : 'invalid_string' };
  const keys = Object.keys(data);
  if (keys.length > MAX_DATA_KEYS) return { field: 'data', message: `data may hold at most ${MAX_DATA_KEYS} keys`, code: 'too_big' };
  for (const key of keys) {
    if (key.length < 1 || key.length > MAX_DATA_KEY_LENGTH) {
      return { field: `data.${key.slice(0, 40)}`, message: `data keys must be 1-${MAX_DATA_KEY_LENGTH} characters`, code: 'invalid_string' };
    }
  }
  if (Buffer.byteLength(JSON.stringify(data), 'utf8') > MAX_DATA_BYTES) {
    return { field: 'data', message: `data may be at most ${MAX_DATA_BYTES / 1024} KB as JSON`, code: 'too_big' };
  }
  return null;
}

/** `data` as sent on contact writes, track, send and UPDATE_CONTACT steps: an object within the limits of contract section 5. */
export const contactData = z.record(z.unknown(), { invalid_type_error: 'data must be an object' }).superRefine((data, ctx) => {
  const problem = dataProblem(data);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.field.split('.').slice(1), params: { code: problem.code } });
});
