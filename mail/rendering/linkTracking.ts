import type { EmailLinks } from '../links/signedLinks';
import { findLandmarks } from './htmlLandmarks';

/**
 * Tracking and footer edits: only the spans htmlLandmarks found are replaced, so the rest of the
 * message stays byte for byte as rendered.
 */
interface Splice {
  at: number;
  end: number;
  text: string;
}

function applySplices(html: string, splices: Splice[]): string {
  splices.sort((a, b) => a.at - b.at);
  let out = '';
  let from = 0;
  for (const s of splices) {
    out += html.slice(from, s.at) + s.text;
    from = s.end;
  }
  return out + html.slice(from);
}

export function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Puts `snippet` just before `</body>`, or at the end when there is none. */
export function insertAtBodyEnd(html: string, snippet: string): string {
  const { bodyClose } = findLandmarks(html);
  const at = bodyClose ?? html.length;
  return applySplices(html, [{ at, end: at, text: snippet }]);
}

export function openPixel(links: EmailLinks): string {
  return `<img src="${escapeAttribute(links.openPixelUrl)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0;" />`;
}

/** Whether a link is one of the recipient's own pages (or already a tracked click): never tracked. */
function isOwnLink(target: string, links: EmailLinks): boolean {
  const clickPrefix = links.clickUrl('').split('?')[0];
  return (
    [links.unsubscribeUrl, links.subscribeUrl, links.manageUrl].some((own) => target === own || target.startsWith(`${own}?`) || target.startsWith(`${own}#`)) ||
    target.startsWith(`${clickPrefix}?`)
  );
}

/**
 * Tracking for rendered HTML: every http(s) link becomes a signed click redirect (except the
 * unsubscribe / subscribe / manage pages; `mailto:`, `tel:` and `#anchors` are not http), and
 * the open pixel goes at the end of the body.
 */
export function addTracking(html: string, links: EmailLinks, tracking: { opens: boolean; clicks: boolean }): string {
  if (!tracking.opens && !tracking.clicks) return html;
  const { hrefs, bodyClose } = findLandmarks(html);
  const splices: Splice[] = [];
  if (tracking.clicks) {
    for (const href of hrefs) {
      // Browsers ignore whitespace around a URL; the redirect's target is what they would open.
      const target = href.value.trim();
      if (!/^https?:\/\//i.test(target) || isOwnLink(target, links)) continue;
      splices.push({ at: href.start, end: href.end, text: `href="${escapeAttribute(links.clickUrl(target))}"` });
    }
  }
  if (tracking.opens) {
    const at = bodyClose ?? html.length;
    splices.push({ at, end: at, text: openPixel(links) });
  }
  return applySplices(html, splices);
}
