/**
 * Rules for JSON that comes from outside (request bodies, contact data from any write path),
 * checked without recursion so that no input, however deep, can overflow the checker's stack.
 *
 * - Arrays and objects nest at most MAX_JSON_DEPTH levels (the outermost value is level 1).
 *   Anything that later walks the value recursively (JSON.stringify, PostgreSQL's jsonb parser,
 *   template rendering, condition trees) is then safe.
 * - Text (string values and object keys) holds no NUL character and no unpaired UTF-16
 *   surrogate: PostgreSQL text and jsonb cannot store either, and a refusal by the database would
 *   fail every write sharing the statement.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * True when JSON text nests arrays/objects deeper than `maxDepth`. A single pass over the
 * characters (strings skipped), stopping at the first level too deep; run before JSON.parse so a
 * hostile body is refused before any structure is built. Malformed text is left to JSON.parse.
 */
export function jsonTextTooDeep(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

export type JsonProblemCode = 'too_deep' | 'nul_character' | 'unpaired_surrogate' | 'prototype_key';

export interface JsonProblem {
  /** Dot path of the offending value or key (`data.address.0.city`); `prefix` alone for the root. */
  path: string;
  code: JsonProblemCode;
  message: string;
}

export interface JsonCheckOptions {
  maxDepth?: number;
  /** Path of the value itself, prepended to every reported path (e.g. `data`). */
  prefix?: string;
  /**
   * Refuse keys that poison prototypes when the value is later merged with Object.assign or a
   * plain assignment (`__proto__`, and `constructor` holding `prototype`). Request bodies set this.
   */
  refusePrototypeKeys?: boolean;
}

// With the `u` flag, a surrogate pair is one code point, so only unpaired halves match.
const UNPAIRED_SURROGATE = /\p{Cs}/u;

function textProblem(text: string): { code: JsonProblemCode; what: string } | null {
  if (text.includes('\u0000')) return { code: 'nul_character', what: 'must not contain NUL characters (\\u0000)' };
  if (UNPAIRED_SURROGATE.test(text))
    return { code: 'unpaired_surrogate', what: 'must be valid Unicode (an unpaired surrogate such as \\ud800 cannot be stored)' };
  return null;
}

interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | null;
  key: string;
}

function pathOf(frame: Frame | null, prefix: string, extraKey?: string): string {
  const parts: string[] = extraKey === undefined ? [] : [extraKey];
  for (let f = frame; f && f.parent; f = f.parent) parts.push(f.key);
  if (prefix) parts.push(prefix);
  return parts.reverse().join('.') || '(body)';
}

/**
 * The first problem in a parsed JSON value (depth, text, optionally prototype keys), or null.
 * An explicit stack instead of recursion; it stops at the first problem, and a cyclic value
 * stops at the depth bound.
 */
export function findJsonProblem(root: unknown, options: JsonCheckOptions = {}): JsonProblem | null {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  const prefix = options.prefix ?? '';
  const stack: Frame[] = [{ value: root, depth: 1, parent: null, key: '' }];
  while (stack.length) {
    const frame = stack.pop()!;
    const value = frame.value;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { path: pathOf(frame, prefix), code: problem.code, message: `Text ${problem.what}` };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (frame.depth > maxDepth) {
      return { path: pathOf(frame, prefix), code: 'too_deep', message: `JSON may nest arrays and objects at most ${maxDepth} levels deep` };
    }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], depth: frame.depth + 1, parent: frame, key: String(i) });
      continue;
    }
    const keys = Object.keys(value);
    for (const key of keys) {
      const problem = textProblem(key);
      if (problem) return { path: pathOf(frame, prefix, key), code: problem.code, message: `Keys ${problem.what}` };
      if (options.refusePrototypeKeys) {
        const child = (value as Record<string, unknown>)[key];
        if (key === '__proto__' || (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype'))) {
          return {
            path: pathOf(frame, prefix, key),
            code: 'prototype_key',
            message: 'JSON keys named "__proto__" (or constructor.prototype) are not accepted',
          };
        }
      }
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      stack.push({ value: (value as Record<string, unknown>)[keys[i]], depth: frame.depth + 1, parent: frame, key: keys[i] });
    }
  }
  return null;
}
