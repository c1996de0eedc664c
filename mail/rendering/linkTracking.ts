import type { EmailLinks } from '../links/signedLinks';
import type { HrefSpan } from './htmlLandmarks';

/**
 * Tracking and footer edits: only the spans htmlLandmarks found are replaced, so the rest of the
 * message stays byte for byte as rendered.
 */
export interface Splice {
  at: number;
  end: number;
  text: string;
}

/** Splices in order of position; equal positions keep the order they were given in. */
export function applySplices(html: string, splices: Splice[]): string {
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

export function openPixel(links: EmailLinks): string {
  return `<img src="${escapeAttribute(links.openPixelUrl)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0;" />`;
}

/** What a link target needs for its click redirect that no recipient changes, kept per template. */
interface TrackedTarget {
  /** An http(s) link: the only kind that is tracked (`mailto:`, `tel:` and `#anchors` are not http). */
  http: boolean;
  /** encodeURIComponent(target), once it is needed: never contains `&"<>`, so it goes into the attribute as it is. */
  encoded: string | null;
}

/** Targets seen in one template's links, so each is classified and encoded once; cleared when it grows past this. */
export const MAX_TARGETS_KEPT = 500;
export type TrackedTargets = Map<string, TrackedTarget>;

function trackedTarget(target: string, known: TrackedTargets): TrackedTarget {
  let entry = known.get(target);
  if (!entry) {
    entry = { http: /^https?:\/\//i.test(target), encoded: null };
    if (known.size >= MAX_TARGETS_KEPT) known.clear();
    known.set(target, entry);
  }
  return entry;
}

/** The recipient's own pages (and already tracked clicks): never tracked. */
function ownLinkTest(links: EmailLinks): (target: string) => boolean {
  const clickPrefix = `${links.clickBase.split('?')[0]}?`;
  const own = [links.unsubscribeUrl, links.subscribeUrl, links.manageUrl];
  return (target) => own.some((url) => target === url || target.startsWith(`${url}?`) || target.startsWith(`${url}#`)) || target.startsWith(clickPrefix);
}

/**
 * Click tracking: every http(s) link becomes a signed click redirect, except the unsubscribe /
 * subscribe / manage pages. `hrefs` are the links of the HTML the splices apply to.
 */
export function clickSplices(hrefs: HrefSpan[], links: EmailLinks, known: TrackedTargets): Splice[] {
  const splices: Splice[] = [];
  const isOwn = ownLinkTest(links);
  // escapeAttribute(clickUrl(target)), assembled from parts that are escaped once.
  const before = `href="${escapeAttribute(links.clickBase)}?url=`;
  for (const href of hrefs) {
    // Browsers ignore whitespace around a URL; the redirect's target is what they would open.
    const target = href.value.trim();
    const entry = trackedTarget(target, known);
    if (!entry.http || isOwn(target)) continue;
    // encodeURIComponent throws on a lone surrogate, as clickUrl always did.
    entry.encoded ??= encodeURIComponent(target);
    splices.push({ at: href.start, end: href.end, text: `${before}${entry.encoded}&amp;sig=${links.clickSignature(target)}"` });
  }
  return splices;
}
