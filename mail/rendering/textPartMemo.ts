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
  /** The HTML with each occurrence of the token as MARKER (or the HTML itself when there is no token). */
  key: string;
  tokenised: boolean;
  /** Word wrap counts characters: a token of another length would wrap differently. */
  tokenLength: number;
  text: string;
}

export class TextPartMemo {
  private last: Remembered | null = null;

  /** htmlToText(html), where `token` is the recipient's contact token, or null without links. */
  textOf(html: string, token: string | null): string {
    if (html.length > MAX_REMEMBERED_HTML) return htmlToText(html);
    const tokenised = token !== null && token.length > 0 && html.includes(token) && !html.includes(MARKER);
    const key = tokenised ? html.replaceAll(token, MARKER) : html;
    const last = this.last;
    const tokenLength = tokenised ? token.length : 0;
    if (last && last.tokenised === tokenised && last.tokenLength === tokenLength && last.key === key)
      return tokenised ? last.text.replaceAll(MARKER, token) : last.text;

    const text = htmlToText(html);
    this.last = null;
    if (!tokenised) this.last = { key, tokenised, tokenLength, text };
    else if (tokenAppearsOnlyAsItself(text, token)) this.last = { key, tokenised, tokenLength, text: text.replaceAll(token, MARKER) };
    return text;
  }
}

/** The token appears in the text only as written (not upper-cased) and the marker not at all. */
function tokenAppearsOnlyAsItself(text: string, token: string): boolean {
  if (text.includes(MARKER) || !/[a-z]/.test(token)) return false;
  return countOf(text, token) === countOf(text.toLowerCase(), token.toLowerCase());
}

function countOf(haystack: string, needle: string): number {
  let count = 0;
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) count++;
  return count;
}
