/**
 * Plunk's fallback form `{{name ?? "friend"}}` is not Handlebars. Before compiling, each plain
 * mustache whose expression is `a ?? b [?? c ...]` (outside string literals) is rewritten to the
 * `default` helper: `{{default a (default b c)}}`; `{{{ }}}`, `{{& }}` and `~` whitespace control
 * keep their meaning. Comments, raw blocks, escaped mustaches (`\{{`) and block/partial
 * mustaches are left as they are, as is anything not made of simple operands (a helper call,
 * say); Handlebars then reports it as a syntax error. A linear scan, no regex over the template.
 */

/** A path (`name`, `data.plan.name`, `../x`, `@index`, `this`), a string, number or boolean. */
const SIMPLE_OPERAND = /^(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|-?\d+(?:\.\d+)?|@?[^\s"'(){}=|~&!#^/<>][^\s"'(){}=|~]*)$/;

export function rewriteFallbacks(source: string): string {
  if (!source.includes('??')) return source;
  let out = '';
  let copiedUpTo = 0;
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('{{', i);
    if (open < 0) break;
    // `\{{` is an escaped (literal) mustache; `\\{{` is a backslash before a real one.
    if (open > 0 && source[open - 1] === '\\' && !(open > 1 && source[open - 2] === '\\')) {
      i = open + 2;
      continue;
    }
    if (source.startsWith('{{{{', open)) {
      // Raw block: its content is literal up to `{{{{/name}}}}`.
      const end = source.indexOf('{{{{/', open + 4);
      const close = end < 0 ? -1 : source.indexOf('}}}}', end);
      i = close < 0 ? source.length : close + 4;
      continue;
    }
    const afterTilde = source[open + 2] === '~' ? open + 3 : open + 2;
    if (source[afterTilde] === '!') {
      const long = source.startsWith('!--', afterTilde);
      const close = source.indexOf(long ? '--' : '}}', afterTilde + (long ? 3 : 1));
      const end = close < 0 ? -1 : source.indexOf('}}', close);
      i = end < 0 ? source.length : end + 2;
      continue;
    }
    const triple = source[open + 2] === '{';
    const innerStart = open + (triple ? 3 : 2);
    const closer = triple ? '}}}' : '}}';
    const innerEnd = findMustacheEnd(source, innerStart, closer);
    if (innerEnd < 0) break;
    const inner = source.slice(innerStart, innerEnd);
    const rewritten = inner.includes('??') ? rewriteExpression(inner) : null;
    if (rewritten !== null) {
      out += source.slice(copiedUpTo, innerStart) + rewritten;
      copiedUpTo = innerEnd;
    }
    i = innerEnd + closer.length;
  }
  return copiedUpTo === 0 ? source : out + source.slice(copiedUpTo);
}

/** Index of the closing braces of a mustache, skipping string literals; -1 when unterminated. */
function findMustacheEnd(source: string, from: number, closer: string): number {
  let quote: string | null = null;
  for (let j = from; j < source.length; j++) {
    const c = source[j];
    if (quote) {
      if (c === '\\') j++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '}' && source.startsWith(closer, j)) {
      return j;
    } else if (c === '{' && source.startsWith('{{', j)) {
      return -1; // a new mustache opens before this one closed: leave it to Handlebars
    }
  }
  return -1;
}

/** Splits on `??` outside string literals. */
function splitOnFallback(expression: string): string[] {
  const parts: string[] = [];
  let quote: string | null = null;
  let start = 0;
  for (let j = 0; j < expression.length; j++) {
    const c = expression[j];
    if (quote) {
      if (c === '\\') j++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '?' && expression[j + 1] === '?') {
      parts.push(expression.slice(start, j));
      start = j + 2;
      j++;
    }
  }
  parts.push(expression.slice(start));
  return parts;
}

/** The rewritten mustache content, or null to leave it as written. */
function rewriteExpression(inner: string): string | null {
  const match = /^(~?\s*&?\s*)([\s\S]*?)(\s*~?)$/.exec(inner);
  if (!match) return null;
  const [, lead, expression, trail] = match;
  const parts = splitOnFallback(expression).map((p) => p.trim());
  if (parts.length < 2 || !parts.every((p) => SIMPLE_OPERAND.test(p))) return null;
  let folded = parts[parts.length - 1];
  for (let k = parts.length - 2; k >= 0; k--) {
    folded = k === 0 ? `default ${parts[k]} ${folded}` : `(default ${parts[k]} ${folded})`;
  }
  return `${lead}${folded}${trail}`;
}
