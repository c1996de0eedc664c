import { LRUCache } from 'lru-cache';
import type { EmailLinks } from '../links/signedLinks';
import { compileTemplate, describeHandlebarsError, htmlTooDeep, type RenderFunction } from './templateCompiler';
import { findLandmarks, MAX_HTML_DEPTH, type HrefSpan } from './htmlLandmarks';
import { applySplices, clickSplices, MAX_TARGETS_KEPT, openPixel, type Splice, type TrackedTargets } from './linkTracking';
import { htmlToText } from './htmlToText';
import { textSkeletonOf } from './textSkeleton';
import { TemplateRenderError, type TemplateProblem } from './templateProblems';
import { unsubscribeFooter } from './unsubscribeFooter';

/**
 * A template made ready once for all its recipients (contract section 7): subject and body
 * compiled (MJML first), problems found, and what per-recipient rendering can reuse (the
 * classified link targets, the text part's skeleton). `renderPrepared` then does only what depends
 * on the recipient: the variables, one tokenizer pass over the rendered HTML (depth, `</body>`,
 * links), the footer, the text part (the skeleton's, filled in) and the signed links.
 */
export type TemplateType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';

export interface TemplateSource {
  subject: string;
  body: string;
  type: TemplateType;
}

export interface TrackingSettings {
  opens: boolean;
  clicks: boolean;
}

export interface PreparedTemplate {
  readonly type: TemplateType;
  readonly tracking: TrackingSettings | null;
  /** What is wrong with the template; when any, rendering throws them. */
  readonly problems: TemplateProblem[];
  readonly subject: RenderFunction | null;
  readonly body: RenderFunction | null;
  readonly trackedTargets: TrackedTargets;
  /** The Handlebars source of the body, whose text skeleton (textSkeleton.ts) makes the text part; null for a finished message. */
  readonly bodySource: string | null;
}

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
}

/** Compiles (cached by source) and reports syntax errors, unknown helpers and MJML errors; [] when fine. */
export function checkTemplate(source: { subject: string; body: string }): TemplateProblem[] {
  const problems: TemplateProblem[] = [];
  for (const field of ['subject', 'body'] as const) {
    for (const message of compileTemplate(field, source[field]).problems) problems.push({ field, message });
  }
  return problems;
}

/** What renders of one body learn that holds for every variant of it (subject, type, tracking): how its link targets are tracked. */
interface BodyMemory {
  trackedTargets: TrackedTargets;
}

/** `tracking` applies when rendering gets links; null tracks nothing. */
export function prepareTemplate(source: TemplateSource, tracking: TrackingSettings | null, memory: BodyMemory = newBodyMemory()): PreparedTemplate {
  const subject = compileTemplate('subject', source.subject);
  const body = compileTemplate('body', source.body);
  return {
    type: source.type,
    tracking: tracking && (tracking.opens || tracking.clicks) ? { opens: tracking.opens, clicks: tracking.clicks } : null,
    problems: checkTemplate(source),
    subject: subject.render,
    body: body.render,
    trackedTargets: memory.trackedTargets,
    bodySource: body.handlebarsSource ?? null,
  };
}

/**
 * A finished message made ready like a template, without Handlebars: its subject and HTML are
 * what every recipient gets before the footer and tracking (the SMTP relay's messages).
 */
export function literalTemplate(source: TemplateSource, tracking: TrackingSettings | null): PreparedTemplate {
  return {
    type: source.type,
    tracking: tracking && (tracking.opens || tracking.clicks) ? { opens: tracking.opens, clicks: tracking.clicks } : null,
    problems: [],
    subject: () => source.subject,
    body: () => source.body,
    ...newBodyMemory(),
    bodySource: null,
  };
}

function newBodyMemory(): BodyMemory {
  return { trackedTargets: new Map() };
}

/**
 * Prepared templates kept for reuse, keyed by body (the same string object for a whole campaign
 * batch, so a lookup does not even read it) and then by type, tracking and subject. Bounded by
 * count and by size: each body is charged twice its length plus what its memory can hold (the
 * tracked targets, at most MAX_TARGETS_KEPT); the compiled functions are bounded by
 * compileTemplate's own cache, the text skeletons by textSkeleton.ts's.
 */
interface PreparedBody {
  memory: BodyMemory;
  variants: Map<string, PreparedTemplate>;
}

const MAX_VARIANTS_PER_BODY = 16;
/** The targets with their encoded forms. */
const BODY_MEMORY_ALLOWANCE = MAX_TARGETS_KEPT * 200;
const prepared = new LRUCache<string, PreparedBody>({
  max: 500,
  maxSize: 64_000_000,
  sizeCalculation: (_prepared, body) => 2 * body.length + BODY_MEMORY_ALLOWANCE,
});

export function preparedTemplate(source: TemplateSource, tracking: TrackingSettings | null): PreparedTemplate {
  const variantKey = `${source.type}\u0000${tracking ? `${+tracking.opens}${+tracking.clicks}` : '-'}\u0000${source.subject}`;
  let body = prepared.get(source.body);
  let found = body?.variants.get(variantKey);
  if (found) return found;
  if (!body) prepared.set(source.body, (body = { memory: newBodyMemory(), variants: new Map() }));
  found = prepareTemplate(source, tracking, body.memory);
  if (body.variants.size >= MAX_VARIANTS_PER_BODY) body.variants.clear();
  body.variants.set(variantKey, found);
  return found;
}

/**
 * htmlToText(html), from the template's text skeleton when it has one that holds for these
 * variables (html is the body rendered with them, plus the footer with `footerUrl` when given).
 */
function textPart(template: PreparedTemplate, variables: Record<string, unknown>, html: string, footerUrl: string | null): string {
  const skeleton = template.bodySource === null ? null : textSkeletonOf(template.bodySource);
  return skeleton?.textFor(variables, footerUrl) ?? htmlToText(html);
}

function renderField(field: 'subject' | 'body', render: RenderFunction, variables: Record<string, unknown>): string {
  try {
    return render(variables);
  } catch (error) {
    throw new TemplateRenderError([{ field, message: describeHandlebarsError(error) }]);
  }
}

/** A header value: one line, no control characters. */
export function singleLineSubject(subject: string): string {
  return subject
    .replace(/\s*[\r\n\u2028\u2029\u0085]+\s*/g, ' ')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .trim();
}

/**
 * One recipient's email. `links` (from emailLinks()) give MARKETING mail its footer and the
 * List-Unsubscribe headers, and make tracking apply. Throws TemplateRenderError for a template
 * that does not compile or render (a 422 for callers).
 */
export function renderPrepared(template: PreparedTemplate, variables: Record<string, unknown>, links?: EmailLinks): RenderedEmail {
  if (template.problems.length > 0 || !template.subject || !template.body) throw new TemplateRenderError(template.problems);

  const subject = singleLineSubject(renderField('subject', template.subject, variables));
  const rendered = renderField('body', template.body, variables);
  const landmarks = findLandmarks(rendered);
  // Raw variables ({{{html}}}) can nest what the template did not.
  if (landmarks.maxDepth > MAX_HTML_DEPTH) throw new TemplateRenderError([{ field: 'body', message: htmlTooDeep }]);
  const headers: Record<string, string> = {};
  if (!links) return { subject, html: rendered, text: textPart(template, variables, rendered, null), headers };

  // "Uses {{unsubscribeUrl}}" judged on what the recipient gets: the link is in the rendered HTML.
  const hasOwnUnsubscribeLink = rendered.includes(links.unsubscribeUrl);
  let footer: Splice | null = null;
  if (template.type === 'MARKETING' && !hasOwnUnsubscribeLink) {
    const at = landmarks.bodyClose ?? rendered.length;
    footer = { at, end: at, text: unsubscribeFooter(links.unsubscribeUrl) };
  }
  if (template.type === 'MARKETING' || hasOwnUnsubscribeLink) {
    headers['List-Unsubscribe'] = `<${links.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  const withFooter = footer ? applySplices(rendered, [footer]) : rendered;

  // The text part keeps real link targets: no click redirects, no pixel.
  const text = textPart(template, variables, withFooter, footer ? links.unsubscribeUrl : null);
  const tracking = template.tracking;
  if (!tracking) return { subject, html: withFooter, text, headers };

  // Tracking edits the HTML with the footer. The footer adds only its own unsubscribe link (never
  // tracked) and, put just before a real `</body>` (where the tokenizer reads text), changes how
  // nothing after it is read: the landmarks found without it, shifted past it, are its landmarks.
  // Appended at the end of HTML that may stop inside a tag or comment, it is read again.
  let hrefs: HrefSpan[] = landmarks.hrefs;
  let pixelAt = landmarks.bodyClose ?? rendered.length;
  const splices: Splice[] = footer ? [footer] : [];
  let target = rendered;
  if (footer && landmarks.bodyClose === null) {
    target = withFooter;
    splices.length = 0;
    const again = findLandmarks(withFooter);
    hrefs = again.hrefs;
    pixelAt = again.bodyClose ?? withFooter.length;
  }
  if (tracking.clicks) splices.push(...clickSplices(hrefs, links, template.trackedTargets));
  if (tracking.opens) splices.push({ at: pixelAt, end: pixelAt, text: openPixel(links) });
  return { subject, html: applySplices(target, splices), text, headers };
}
