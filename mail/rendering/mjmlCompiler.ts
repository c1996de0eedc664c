import type mjml2htmlType from 'mjml';
import { LRUCache } from 'lru-cache';

/**
 * MJML → HTML, before Handlebars runs over the result. MJML is slow (tens of milliseconds for a
 * small email), so its output is cached per source.
 *
 * MJML 4 is used, not 5: MJML 5's mjml2html is asynchronous only, and rendering is synchronous
 * here (see the notes). Includes are ignored: `<mj-include path="/etc/passwd">` must not read
 * the server's files.
 */
export interface MjmlResult {
  html: string;
  problems: string[];
}

/** "A body whose first tag is <mjml>": leading whitespace and comments allowed. */
const MJML_START = /^\s*(?:<!--[\s\S]*?-->\s*)*<mjml[\s>/]/i;

export function isMjml(source: string): boolean {
  return MJML_START.test(source);
}

const cache = new LRUCache<string, MjmlResult>({
  max: 300,
  maxSize: 64_000_000,
  sizeCalculation: (value, key) => key.length + value.html.length + 1,
});

export function compileMjml(source: string): MjmlResult {
  const cached = cache.get(source);
  if (cached) return cached;
  const result = compileUncached(source);
  cache.set(source, result);
  return result;
}

/**
 * MJML and its components weigh on a process's memory once loaded, and most installations
 * never send an MJML template: it loads on the first one.
 */
let mjml2html: typeof mjml2htmlType | undefined;
function loadMjml(): typeof mjml2htmlType {
  if (!mjml2html) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, synchronously, as rendering is synchronous
    const loaded = require('mjml') as typeof mjml2htmlType & { default?: typeof mjml2htmlType };
    mjml2html = loaded.default ?? loaded;
  }
  return mjml2html;
}

function compileUncached(source: string): MjmlResult {
  try {
    const output = loadMjml()(source, { validationLevel: 'soft', ignoreIncludes: true, keepComments: false, minify: false, beautify: false });
    const problems = output.errors
      // `<mj-section background-color="{{color}}">` is not a colour until Handlebars has run.
      .filter((e) => !/\{\{/.test(e.message))
      .map((e) => `MJML line ${e.line}: ${e.message}`);
    return { html: output.html, problems };
  } catch (error) {
    return { html: '', problems: [`MJML: ${error instanceof Error ? error.message : String(error)}`] };
  }
}
