import type { EmailLinks } from '../links/signedLinks';
import { preparedTemplate, renderPrepared, type RenderedEmail, type TemplateType, type TrackingSettings } from './preparedTemplate';

/**
 * The one renderer of Mailroom (contract section 7), used by /v1/send, campaigns and workflows
 * alike: Handlebars over HTML (MJML first when the body starts with `<mjml>`), the subject
 * rendered too, a text part, the unsubscribe footer and headers, and open / click tracking.
 * Pure and synchronous: no I/O. The work that does not depend on the recipient is done once per
 * template (preparedTemplate.ts); this is the one-call form of it.
 */
export { TemplateRenderError, type TemplateProblem } from './templateProblems';
export {
  checkTemplate,
  literalTemplate,
  preparedTemplate,
  renderPrepared,
  singleLineSubject,
  type PreparedTemplate,
  type RenderedEmail,
  type TemplateType,
  type TrackingSettings,
} from './preparedTemplate';

export interface RenderInput {
  subject: string;
  body: string;
  type: TemplateType;
  /** Variables as built by templateVariables(). */
  variables: Record<string, unknown>;
  /** From emailLinks(); when given, MARKETING mail gets the footer and List-Unsubscribe headers, and tracking applies. */
  links?: EmailLinks;
  tracking?: TrackingSettings;
}

/** Throws TemplateRenderError for a template that does not compile or render (a 422 for callers). */
export function renderEmail(input: RenderInput): RenderedEmail {
  return renderPrepared(preparedTemplate(input, input.tracking ?? null), input.variables, input.links);
}
