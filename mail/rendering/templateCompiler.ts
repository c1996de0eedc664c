import { LRUCache } from 'lru-cache';
import type Handlebars from 'handlebars';
import { compileOptions, handlebars, LoopBudgetExceeded, runtimeOptions, withLoopBudget } from './handlebarsEnvironment';
import { rewriteFallbacks } from './fallbackSyntax';
import { compileMjml, isMjml } from './mjmlCompiler';
import { findLandmarks, MAX_HTML_DEPTH } from './htmlLandmarks';

/**
 * Template source → a render function, compiled once and cached (bounded by count and by the
 * size of the sources it holds). A source that does not compile is cached too, with its problems,
 * so checking it again is cheap.
 */
export type TemplateKind = 'subject' | 'body';

export type RenderFunction = (variables: Record<string, unknown>) => string;

export interface CompiledTemplate {
  render: RenderFunction | null;
  /** Messages of what is wrong; empty when `render` is set. */
  problems: string[];
  /** What Handlebars compiled (after MJML and the `??` rewrite), when it did: the text part's skeleton is made from it. */
  handlebarsSource?: string;
}

/** Largest sources accepted: a 1 MB body must work, with room for MJML's expansion. */
export const MAX_BODY_SOURCE_CHARS = 2_000_000;
export const MAX_SUBJECT_SOURCE_CHARS = 10_000;
/**
 * Handlebars' compile time grows with the number of mustaches (and nested blocks cost more), so
 * this many keeps the first compile of the largest template well under a second; real templates
 * use a few hundred at most (loops repeat one mustache, they do not multiply them).
 */
export const MAX_PLACEHOLDERS = 5_000;

const cache = new LRUCache<string, CompiledTemplate>({
  max: 500,
  maxSize: 64_000_000,
  // The compiled source is charged too: for MJML it is a second, larger string (otherwise often the source itself).
  sizeCalculation: (value, key) => key.length + 1 + (value.handlebarsSource?.length ?? 0),
});

export function compileTemplate(kind: TemplateKind, source: string): CompiledTemplate {
  const key = `${kind}\u0000${source}`;
  const cached = cache.get(key);
  if (cached) return cached;
  const compiled = compileUncached(kind, source);
  cache.set(key, compiled);
  return compiled;
}

function compileUncached(kind: TemplateKind, source: string): CompiledTemplate {
  const limit = kind === 'subject' ? MAX_SUBJECT_SOURCE_CHARS : MAX_BODY_SOURCE_CHARS;
  if (source.length > limit) return { render: null, problems: [`${kind} may be at most ${limit} characters`] };

  let html = source;
  if (kind === 'body' && isMjml(source)) {
    const mjml = compileMjml(source);
    if (mjml.problems.length > 0) return { render: null, problems: mjml.problems };
    html = mjml.html;
  }

  const placeholders = countPlaceholders(html);
  if (placeholders > MAX_PLACEHOLDERS) {
    return { render: null, problems: [`${kind} has ${placeholders} placeholders ({{…}}); at most ${MAX_PLACEHOLDERS} are allowed`] };
  }

  if (kind === 'body' && findLandmarks(html).maxDepth > MAX_HTML_DEPTH) return { render: null, problems: [htmlTooDeep] };

  let template: Handlebars.TemplateDelegate;
  const handlebarsSource = rewriteFallbacks(html);
  try {
    // The subject is a header, not HTML: it is never escaped into entities.
    template = handlebars.compile(handlebarsSource, { ...compileOptions, noEscape: kind === 'subject' });
    // Handlebars compiles lazily, on the first call: make it compile now, with no variables.
    withLoopBudget(() => template({}, runtimeOptions));
  } catch (error) {
    return { render: null, problems: [describeHandlebarsError(error)] };
  }
  const render: RenderFunction = (variables) => withLoopBudget(() => template(variables, runtimeOptions));
  return { render, problems: [], handlebarsSource };
}

export const htmlTooDeep = `HTML elements may nest at most ${MAX_HTML_DEPTH} levels deep`;

function countPlaceholders(source: string): number {
  let count = 0;
  for (let i = source.indexOf('{{'); i >= 0; i = source.indexOf('{{', i + 2)) count++;
  return count;
}

/** Handlebars' messages, made readable for someone editing a template. */
export function describeHandlebarsError(error: unknown): string {
  if (error instanceof RangeError) return 'the template nests too deeply';
  if (error instanceof LoopBudgetExceeded) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  const unknownHelper = /You specified knownHelpersOnly, but used the unknown helper (\S+?)(?: - (\d+):(\d+))?$/.exec(message);
  if (unknownHelper) {
    const where = unknownHelper[2] ? ` (line ${unknownHelper[2]})` : '';
    return `unknown helper "${unknownHelper[1]}"${where}; available: default, if, unless, each, with, lookup`;
  }
  // "Parse error on line 3:\n<excerpt>\n---^\nExpecting 'A', 'B', … got 'EOF'": the list helps nobody.
  const parse = /^(Parse error on line \d+:\n[^\n]*\n-*\^)\nExpecting [\s\S]*, got '([^']*)'$/.exec(message);
  if (parse) return `${parse[1]}\n${parse[2] === 'EOF' ? 'unexpected end of template (a block or mustache left open?)' : `unexpected ${parse[2]}`}`;
  return message.length > 500 ? `${message.slice(0, 500)}…` : message;
}
