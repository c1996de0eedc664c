import { QuoteType, Tokenizer } from 'htmlparser2';

/**
 * What edits to rendered HTML need to know, found with a real HTML tokenizer (htmlparser2's, streaming; its tree
 * builder is skipped because it costs quadratic time on deep nesting): where `</body>` is, and
 * the exact source span of every link's `href`. Also how deep elements nest (MAX_HTML_DEPTH). Links inside comments (Outlook's conditional
 * comments included), scripts and styles are not links to the tokenizer and stay as written.
 */
export interface HrefSpan {
  start: number;
  end: number;
  value: string;
}

export interface HtmlLandmarks {
  hrefs: HrefSpan[];
  /** Index of the last `</body>`, or null. */
  bodyClose: number | null;
  /** How deep elements nest (void and self-closed elements not counted; stray end tags ignored). */
  maxDepth: number;
}

/**
 * Deeper HTML is refused: email clients flatten or drop it anyway, and html-to-text's tree
 * builder takes quadratic time on it (80,000 levels: seconds).
 */
export const MAX_HTML_DEPTH = 1_000;

const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

export function findLandmarks(html: string): HtmlLandmarks {
  const hrefs: HrefSpan[] = [];
  let bodyClose: number | null = null;
  let depth = 0;
  let maxDepth = 0;
  let tag = '';
  let attribute = '';
  let attributeStart = 0;
  let value = '';
  let hrefSeen = false;
  const noop = () => undefined;
  const tokenizer = new Tokenizer(
    { xmlMode: false, decodeEntities: true },
    {
      onopentagname(start, end) {
        tag = html.slice(start, end).toLowerCase();
        hrefSeen = false;
      },
      onattribname(start, end) {
        attribute = html.slice(start, end).toLowerCase();
        attributeStart = start;
        value = '';
      },
      onattribdata(start, end) {
        value += html.slice(start, end);
      },
      onattribentity(codepoint) {
        value += String.fromCodePoint(codepoint);
      },
      onattribend(quote, end) {
        // Browsers follow the first href of a tag; a repeated one is ignored, so is ours.
        if ((tag === 'a' || tag === 'area') && attribute === 'href' && !hrefSeen && quote !== QuoteType.NoValue) {
          hrefSeen = true;
          hrefs.push({ start: attributeStart, end, value });
        }
      },
      onopentagend() {
        if (!VOID_ELEMENTS.has(tag) && ++depth > maxDepth) maxDepth = depth;
      },
      onselfclosingtag: noop,
      onclosetag(start, end) {
        if (depth > 0) depth--;
        if (html.slice(start, end).toLowerCase() === 'body') bodyClose = html.lastIndexOf('<', start);
      },
      ontext: noop,
      ontextentity: noop,
      oncdata: noop,
      oncomment: noop,
      ondeclaration: noop,
      onprocessinginstruction: noop,
      onend: noop,
    },
  );
  tokenizer.write(html);
  tokenizer.end();
  return { hrefs, bodyClose, maxDepth };
}
