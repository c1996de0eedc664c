import crypto from 'node:crypto';
import { QuoteType, Tokenizer } from 'htmlparser2';
import { compileTemplate, describeHandlebarsError, htmlTooDeep, type TemplateKind } from '../../mail/rendering/templateCompiler';
import { htmlToText } from '../../mail/rendering/htmlToText';
import { TemplateRenderError, type TemplateProblem } from '../../mail/rendering/templateProblems';
import type { EmailLinks } from '../../mail/links/signedLinks';
import type { RenderedEmail, RenderInput } from '../../mail/rendering/renderEmail';

/**
 * The renderer as it was before templates were prepared once (commit e58e272): three tokenizer
 * passes per recipient, the footer and tracking spliced in separately, one createHmac per
 * signature. Frozen here as the oracle the prepared renderer is compared with, byte for byte
 * (test/mail/preparedRender.test.ts), and as the "before" of bench/render.ts. It shares only the
 * Handlebars/MJML compiler and the html-to-text converter with the renderer, which this change
 * did not touch; links are signed here with node's createHmac directly.
 */

function hmac22(secret: string, purpose: string, value: string): string {
  return crypto.createHmac('sha256', secret).update(`mailroom-link:${purpose}:${value}`).digest('base64url').slice(0, 22);
}

export function referenceEmailLinks(publicUrl: string, secret: string, ids: { emailId: string; contactId: string }): EmailLinks {
  const contactToken = `${ids.contactId}.${hmac22(secret, 'contact', ids.contactId)}`;
  const emailToken = `${ids.emailId}.${hmac22(secret, 'open', ids.emailId)}`;
  const clickSignature = (target: string) => hmac22(secret, 'click', `${ids.emailId}\n${target}`);
  return {
    openPixelUrl: `${publicUrl}/t/o/${emailToken}.gif`,
    clickUrl: (target) => `${publicUrl}/t/c/${ids.emailId}?url=${encodeURIComponent(target)}&sig=${clickSignature(target)}`,
    // Not used by the reference renderer; there for the type.
    clickBase: `${publicUrl}/t/c/${ids.emailId}`,
    clickSignature,
    unsubscribeUrl: `${publicUrl}/unsubscribe/${contactToken}`,
    subscribeUrl: `${publicUrl}/subscribe/${contactToken}`,
    manageUrl: `${publicUrl}/manage/${contactToken}`,
    contactToken,
  };
}

const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

function findLandmarks(html: string) {
  const hrefs: Array<{ start: number; end: number; value: string }> = [];
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

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function insertAtBodyEnd(html: string, snippet: string): string {
  const { bodyClose } = findLandmarks(html);
  const at = bodyClose ?? html.length;
  return applySplices(html, [{ at, end: at, text: snippet }]);
}

function openPixel(links: EmailLinks): string {
  return `<img src="${escapeAttribute(links.openPixelUrl)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0;" />`;
}

function isOwnLink(target: string, links: EmailLinks): boolean {
  const clickPrefix = links.clickUrl('').split('?')[0];
  return (
    [links.unsubscribeUrl, links.subscribeUrl, links.manageUrl].some((own) => target === own || target.startsWith(`${own}?`) || target.startsWith(`${own}#`)) ||
    target.startsWith(`${clickPrefix}?`)
  );
}

function addTracking(html: string, links: EmailLinks, tracking: { opens: boolean; clicks: boolean }): string {
  if (!tracking.opens && !tracking.clicks) return html;
  const { hrefs, bodyClose } = findLandmarks(html);
  const splices: Splice[] = [];
  if (tracking.clicks) {
    for (const href of hrefs) {
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

function unsubscribeFooter(unsubscribeUrl: string): string {
  const href = escapeAttribute(unsubscribeUrl);
  return (
    '<div style="margin:24px auto 0;padding:16px;max-width:600px;font-family:Arial,Helvetica,sans-serif;font-size:12px;line-height:18px;color:#8a8a8a;text-align:center;">' +
    `You are receiving this email because you subscribed to it. <a href="${href}" style="color:#8a8a8a;text-decoration:underline;">Unsubscribe</a>` +
    '</div>'
  );
}

function checkTemplate(source: { subject: string; body: string }): TemplateProblem[] {
  const problems: TemplateProblem[] = [];
  for (const field of ['subject', 'body'] as const) {
    for (const message of compileTemplate(field, source[field]).problems) problems.push({ field, message });
  }
  return problems;
}

function renderField(field: TemplateKind, source: string, variables: Record<string, unknown>): string {
  const compiled = compileTemplate(field, source);
  if (!compiled.render) throw new TemplateRenderError(compiled.problems.map((message) => ({ field, message })));
  try {
    return compiled.render(variables);
  } catch (error) {
    throw new TemplateRenderError([{ field, message: describeHandlebarsError(error) }]);
  }
}

function singleLineSubject(subject: string): string {
  return subject
    .replace(/\s*[\r\n\u2028\u2029\u0085]+\s*/g, ' ')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .trim();
}

export function referenceRenderEmail(input: RenderInput): RenderedEmail {
  const problems = checkTemplate(input);
  if (problems.length > 0) throw new TemplateRenderError(problems);

  const subject = singleLineSubject(renderField('subject', input.subject, input.variables));
  let html = renderField('body', input.body, input.variables);
  if (findLandmarks(html).maxDepth > 1_000) throw new TemplateRenderError([{ field: 'body', message: htmlTooDeep }]);
  const headers: Record<string, string> = {};
  const links = input.links;

  if (links) {
    const hasOwnUnsubscribeLink = html.includes(links.unsubscribeUrl);
    if (input.type === 'MARKETING' && !hasOwnUnsubscribeLink) html = insertAtBodyEnd(html, unsubscribeFooter(links.unsubscribeUrl));
    if (input.type === 'MARKETING' || hasOwnUnsubscribeLink) {
      headers['List-Unsubscribe'] = `<${links.unsubscribeUrl}>`;
      headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
    }
  }

  const text = htmlToText(html);
  if (links && input.tracking) html = addTracking(html, links, input.tracking);
  return { subject, html, text, headers };
}

/** The previous renderer's stages, for bench/render.ts to time one by one. */
export const referenceStages = { findLandmarks, insertAtBodyEnd, addTracking, unsubscribeFooter };
