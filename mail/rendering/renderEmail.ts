import type { EmailLinks } from '../links/signedLinks';
import { compileTemplate, describeHandlebarsError, htmlTooDeep, type TemplateKind } from './templateCompiler';
import { findLandmarks, MAX_HTML_DEPTH } from './htmlLandmarks';
import { htmlToText } from './htmlToText';
import { addTracking, insertAtBodyEnd } from './linkTracking';
import { TemplateRenderError, type TemplateProblem } from './templateProblems';
import { unsubscribeFooter } from './unsubscribeFooter';

/**
 * The one renderer of Mailroom (contract section 7), used by /v1/send, campaigns and workflows
 * alike: Handlebars over HTML (MJML first when the body starts with `<mjml>`), the subject
 * rendered too, a text part, the unsubscribe footer and headers, and open / click tracking.
 * Pure and synchronous: no I/O.
 */
export { TemplateRenderError, type TemplateProblem } from './templateProblems';

export type TemplateType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';

export interface RenderInput {
  subject: string;
  body: string;
  type: TemplateType;
  /** Variables as built by templateVariables(). */
  variables: Record<string, unknown>;
  /** From emailLinks(); when given, MARKETING mail gets the footer and List-Unsubscribe headers, and tracking applies. */
  links?: EmailLinks;
  tracking?: { opens: boolean; clicks: boolean };
}

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
}

/** Compiles (cached) and reports syntax errors, unknown helpers and MJML errors; [] when fine. */
export function checkTemplate(source: { subject: string; body: string }): TemplateProblem[] {
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

/** A header value: one line, no control characters. */
export function singleLineSubject(subject: string): string {
  return subject
    .replace(/\s*[\r\n\u2028\u2029\u0085]+\s*/g, ' ')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .trim();
}

/** Throws TemplateRenderError for a template that does not compile or render (a 422 for callers). */
export function renderEmail(input: RenderInput): RenderedEmail {
  const problems = checkTemplate(input);
  if (problems.length > 0) throw new TemplateRenderError(problems);

  const subject = singleLineSubject(renderField('subject', input.subject, input.variables));
  let html = renderField('body', input.body, input.variables);
  // Raw variables ({{{html}}}) can nest what the template did not.
  if (findLandmarks(html).maxDepth > MAX_HTML_DEPTH) throw new TemplateRenderError([{ field: 'body', message: htmlTooDeep }]);
  const headers: Record<string, string> = {};
  const links = input.links;

  if (links) {
    // "Uses {{unsubscribeUrl}}" judged on what the recipient gets: the link is in the rendered HTML.
    const hasOwnUnsubscribeLink = html.includes(links.unsubscribeUrl);
    if (input.type === 'MARKETING' && !hasOwnUnsubscribeLink) html = insertAtBodyEnd(html, unsubscribeFooter(links.unsubscribeUrl));
    if (input.type === 'MARKETING' || hasOwnUnsubscribeLink) {
      headers['List-Unsubscribe'] = `<${links.unsubscribeUrl}>`;
      headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
    }
  }

  // The text part keeps real link targets: no click redirects, no pixel.
  const text = htmlToText(html);
  if (links && input.tracking) html = addTracking(html, links, input.tracking);
  return { subject, html, text, headers };
}
