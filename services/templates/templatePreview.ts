import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../lib/config';
import { notFound } from '../../lib/errors';
import { contactRepository } from '../../db/contacts/contactRepository';
import { emailLinks } from '../../mail/links/signedLinks';
import { preparedTemplate, renderPrepared, type TemplateType } from '../../mail/rendering/renderEmail';
import { templateVariableNames } from '../../mail/rendering/templateVariableNames';
import { templateVariables } from '../sending/templateVariables';

export interface TemplatePreviewInput {
  subject: string;
  body: string;
  type: TemplateType;
  /** Whose data fills the template; none: only `data` (and empty reserved names). */
  contactId?: string;
  /** Request data over the contact's, as `/v1/send`'s `data` is. */
  data?: Record<string, unknown>;
}

export interface TemplatePreview {
  subject: string;
  html: string;
  text: string;
  /** The variables the subject and body read. */
  variables: string[];
}

/**
 * A template as sending renders it for one contact (contract 7: Handlebars, MJML, the unsubscribe
 * footer of MARKETING mail, the text part), but made for looking (contract 21, "looking is not
 * opening"): no open pixel and no click redirects, so links point at their targets and viewing or
 * clicking records nothing. The footer's links are the contact's real subscription pages (a GET
 * of them changes nothing). Throws TemplateRenderError (422) for a template that does not compile
 * or render with this data, and 404 for an unknown contact.
 */
export async function previewTemplate(
  config: Pick<Config, 'publicUrl' | 'secret'>,
  em: EntityManager,
  projectId: string,
  input: TemplatePreviewInput,
): Promise<TemplatePreview> {
  const contact = input.contactId ? await contactRepository.findById(em, projectId, input.contactId) : null;
  if (input.contactId && !contact) throw notFound('contact', input.contactId);
  // An email id no email has: the links are signed as a real email's would be, and name nothing stored.
  const links = emailLinks(config.publicUrl, config.secret, { emailId: crypto.randomUUID(), contactId: contact?.id ?? crypto.randomUUID() });
  const variables = templateVariables(contact ?? { id: '', email: '', data: {} }, input.data ?? {}, links);
  // Tracking null: the same renderer, footer and text part as a send, without the pixel and redirects.
  const rendered = renderPrepared(preparedTemplate({ subject: input.subject, body: input.body, type: input.type }, null), variables, links);
  return { subject: rendered.subject, html: rendered.html, text: rendered.text, variables: templateVariableNames(input.subject, input.body) };
}
