import { convert, type HtmlToTextOptions } from 'html-to-text';

/**
 * The text part of every email, derived from its HTML (before click tracking, so links show
 * their real targets). Links read "text [url]"; images give their alt text; the head, styles
 * and scripts give nothing. Depth is bounded so hostile nesting cannot exhaust the stack.
 */
export const MAX_TEXT_DEPTH = 200;

const options: HtmlToTextOptions = {
  wordwrap: 78,
  limits: { maxDepth: MAX_TEXT_DEPTH, maxInputLength: 20_000_000 },
  formatters: {
    altText(elem, _walk, builder) {
      const alt = typeof elem.attribs?.alt === 'string' ? elem.attribs.alt.trim() : '';
      if (alt) builder.addInline(alt);
    },
  },
  selectors: [
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, linkBrackets: ['[', ']'] } },
    { selector: 'img', format: 'altText' },
    { selector: 'style', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'title', format: 'skip' },
  ],
};

export function htmlToText(html: string): string {
  return convert(html, options).trim();
}
