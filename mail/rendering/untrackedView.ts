import { QuoteType, Tokenizer } from 'htmlparser2';
import { openLinkToken, verifyClickSignature } from '../links/signedLinks';
import { applySplices, escapeAttribute, type Splice } from './linkTracking';

/**
 * Contract 21, "looking is not opening": the HTML of sent mail as a person looks at it in the
 * dashboard (or any client that asks for a preview), without what tracking added: the open pixel
 * is taken out and every click redirect points at its own target again. Only Mailroom's own
 * tracking is undone, recognised by its signatures (mail/links/signedLinks.ts), whatever host
 * PUBLIC_URL named when the mail was made: an `<img>` whose `src` ends `/t/o/<valid token>.gif`
 * is removed, an `href` of `/t/c/<emailId>?url=…&sig=…` whose signature covers `url` becomes
 * `url`. Everything else stays byte for byte as written.
 */
export function untrackedHtml(html: string, secret: string): string {
  const splices: Splice[] = [];
  for (const tag of trackingTags(html)) {
    if (tag.kind === 'img') {
      if (isOpenPixel(tag.value, secret)) splices.push({ at: tag.tagStart, end: tag.tagEnd, text: '' });
    } else {
      const target = clickTarget(tag.value, secret);
      if (target !== null) splices.push({ at: tag.attributeStart, end: tag.attributeEnd, text: `href="${escapeAttribute(target)}"` });
    }
  }
  return splices.length ? applySplices(html, splices) : html;
}

/** How many images of the HTML would be fetched from another host (http or https `src`). */
export function remoteImageCount(html: string): number {
  return trackingTags(html).filter((tag) => tag.kind === 'img' && /^\s*https?:\/\//i.test(tag.value)).length;
}

const PIXEL_PATH = /\/t\/o\/([^/?#]+)\.gif$/;
const CLICK_PATH = /\/t\/c\/([0-9a-fA-F-]{36})$/;

function isOpenPixel(src: string, secret: string): boolean {
  const url = parseUrl(src);
  const token = url && PIXEL_PATH.exec(url.pathname)?.[1];
  return Boolean(token && openLinkToken(secret, 'open', token));
}

/** The signed target of one of Mailroom's click redirects; null for any other link. */
function clickTarget(href: string, secret: string): string | null {
  const url = parseUrl(href);
  const emailId = url && CLICK_PATH.exec(url.pathname)?.[1]?.toLowerCase();
  if (!url || !emailId) return null;
  const target = url.searchParams.get('url');
  const sig = url.searchParams.get('sig');
  return target !== null && sig !== null && verifyClickSignature(secret, emailId, target, sig) ? target : null;
}

function parseUrl(value: string): URL | null {
  try {
    return new URL(value.trim());
  } catch {
    return null;
  }
}

interface TagAttribute {
  kind: 'img' | 'a';
  /** The attribute's value, entities decoded. */
  value: string;
  /** The whole tag, `<` to `>` inclusive (the end exclusive). */
  tagStart: number;
  tagEnd: number;
  /** The attribute, name to closing quote. */
  attributeStart: number;
  attributeEnd: number;
}

/**
 * The `src` of every `<img>` and the first `href` of every `<a>` / `<area>`, found with the same
 * real HTML tokenizer as the renderer (htmlLandmarks.ts): what is inside comments, scripts and
 * styles is not a tag.
 */
function trackingTags(html: string): TagAttribute[] {
  const found: TagAttribute[] = [];
  let open: TagAttribute[] = [];
  let tag = '';
  let tagStart = 0;
  let attribute = '';
  let attributeStart = 0;
  let value = '';
  let seen = false;
  const noop = () => undefined;
  const closeTag = (endIndex: number) => {
    for (const item of open) item.tagEnd = endIndex + 1;
    found.push(...open);
    open = [];
  };
  const tokenizer = new Tokenizer(
    { xmlMode: false, decodeEntities: true },
    {
      onopentagname(start, end) {
        tag = html.slice(start, end).toLowerCase();
        tagStart = html.lastIndexOf('<', start);
        seen = false;
        open = [];
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
        if (seen || quote === QuoteType.NoValue) return;
        const kind = tag === 'img' && attribute === 'src' ? 'img' : (tag === 'a' || tag === 'area') && attribute === 'href' ? 'a' : null;
        if (!kind) return;
        // Browsers use the first of a repeated attribute; so does this.
        seen = true;
        open.push({ kind, value, tagStart, tagEnd: end, attributeStart, attributeEnd: end });
      },
      onopentagend: closeTag,
      onselfclosingtag: closeTag,
      onclosetag: noop,
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
  return found;
}
