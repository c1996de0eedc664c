import { compile, type HtmlToTextOptions } from 'html-to-text';
import { MAX_HTML_DEPTH } from './htmlLandmarks';

/**
 * The text part of every email, derived from its HTML (before click tracking, so links show
 * their real targets). Links read "text [url]"; images give their alt text; the head, styles
 * and scripts give nothing. Rendered HTML nests at most MAX_HTML_DEPTH deep (checked before);
 * the converter's own bound is a second line against exhausting the stack. Lines are not
 * hard-wrapped (docs/decisions.md, "Text parts without hard wraps"): mail clients soft-wrap
 * text/plain and quoted-printable keeps the encoded lines legal; this is what lets the text part
 * be made once per template (textSkeleton.ts), since no line break depends on a recipient's values.
 */
const MAX_TEXT_DEPTH = MAX_HTML_DEPTH + 10;

const options: HtmlToTextOptions = {
  wordwrap: false,
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

// Compiled once: `convert` builds the selector machinery again on every call, which costs more
// than the conversion itself for a typical email.
const converter = compile(options);

export function htmlToText(html: string): string {
  return converter(html).trim();
}
