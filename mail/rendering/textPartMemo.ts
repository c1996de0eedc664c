import { htmlToText } from './htmlToText';

/**
 * The text part of one template's last recipient, reused when the next recipient's HTML differs
 * from it only by the signed contact token (the unsubscribe / subscribe / manage links): a
 * newsletter with no personal data in its body costs html-to-text once per template instead of
 * once per recipient. html-to-text treats two tokens alike (same length, the same kinds of
 * characters, no whitespace, so the same word wrap), so the text of the next recipient is the
 * last one with the token swapped. It is not reused when the text holds the token in any other
 * form (a heading upper-cases it) or the marker below appears in the HTML or text.
 */
const MARKER = '\u0000\u0001'; // no prefix of it is also its suffix, so where it stands is never ambiguous

/** Larger HTML is not remembered: its text is made for each recipient (and memory stays bounded). */
export const MAX_REMEMBERED_HTML = 64_000;

interface Remembered {
  html: string;
  /** The recipient's token, when the HTML holds it (and not the marker). */
  token: string | null;
  text: string;
  /** The HTML with each occurrence of the token as MARKER, made when a next HTML of the same length comes. */
  key?: string;
  /** The text likewise, or null when the token cannot be swapped in it; made on the first match. */
  maskedText?: string | null;
}

export class TextPartMemo {
  private last: Remembered | null = null;

  /** htmlToText(html), where `token` is the recipient's contact token, or null without links. */
  textOf(html: string, token: string | null): string {
    if (html.length > MAX_REMEMBERED_HTML) return htmlToText(html);
    const last = this.last;
    // Only HTML of the same length can match; with equal keys, that means tokens of the same
    // length, which word wrap (counting characters) needs.
    if (last && last.html.length === html.length) {
      const ownToken = token && html.includes(token) && !html.includes(MARKER) ? token : null;
      if (!ownToken || !last.token) {
        if (!ownToken && !last.token && html === last.html) return last.text;
      } else {
        last.key ??= last.html.replaceAll(last.token, MARKER);
        if (html.replaceAll(ownToken, MARKER) === last.key) {
          if (last.maskedText === undefined) last.maskedText = swappable(last.text, last.token) ? last.text.replaceAll(last.token, MARKER) : null;
          if (last.maskedText !== null) return last.maskedText.replaceAll(MARKER, ownToken);
        }
      }
    }
    const text = htmlToText(html);
    this.last = { html, token: token && html.includes(token) && !html.includes(MARKER) ? token : null, text };
    return text;
  }
}

/** The token appears in the text only as written (not upper-cased) and the marker not at all. */
function swappable(text: string, token: string): boolean {
  if (text.includes(MARKER) || !/[a-z]/.test(token)) return false;
  return countOf(text, token) === countOf(text.toLowerCase(), token.toLowerCase());
}

function countOf(haystack: string, needle: string): number {
  let count = 0;
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) count++;
  return count;
}
