import type { Config } from '../../lib/config';
import type { EmailSource, NewEmail } from '../../db/emails/emailRepository';
import { literalTemplate, preparedTemplate, renderPrepared, singleLineSubject, type RenderedEmail, type TemplateType } from '../../mail/rendering/renderEmail';
import { emailLinks } from '../../mail/links/signedLinks';
import { templateVariables } from './templateVariables';
import { recipientRefusal } from './recipientRefusal';

/** What rendering needs of the configuration: the links' base URL and secret, and tracking. */
export type ComposerConfig = Pick<Config, 'publicUrl' | 'secret' | 'trackOpens' | 'trackClicks'>;

/** A template: Handlebars over its subject and body for each recipient (contract 7). */
export interface TemplateContent {
  kind?: 'template';
  subject: string;
  body: string;
  type: TemplateType;
}

/**
 * A finished message (what an SMTP client submits): its subject and parts are sent as written,
 * never run through Handlebars (a `{{` in a relayed message is text). Tracking still edits its
 * HTML part; its own text part is kept, or made from the HTML when it has none.
 */
export interface MessageContent {
  kind: 'message';
  subject: string;
  html: string | null;
  text: string | null;
  type: 'TRANSACTIONAL';
}

export type EmailContent = TemplateContent | MessageContent;

/** What differs between the places that accept mail (/v1/send, a campaign's batch and test email, a SEND_EMAIL step). */
export interface EmailToCompose {
  /** The email's id: in its links, its Message-ID and its row. */
  id: string;
  projectId: string;
  source: EmailSource;
  /** The template source, rendered here, or a finished message. */
  content: EmailContent;
  sender: {
    fromAddress: string;
    fromName: string | null;
    replyTo: string | null;
    /** The domain of the Message-ID `<id@domain>` (the signing or verified sender domain). */
    domain: string;
  };
  recipient: {
    toAddress: string;
    toName: string | null;
    /** The contact the email is recorded against; null for mail to an address that is no contact. */
    contactId: string | null;
    /** What the recipient rule (recipientRefusal) is told; a refusal records the email SUPPRESSED. */
    suppressed: boolean;
    subscribed: boolean;
  };
  /** Whose data fills the template (with the request's data over it) and whom its links name. */
  personalisation: {
    contact: { id: string; email: string; data: Record<string, unknown> };
    requestData: Record<string, unknown>;
    linkContactId: string;
  };
  /** What the email belongs to. */
  owners: { templateId: string | null; campaignId?: string | null; workflowExecutionId?: string | null };
  /** Headers over the rendered ones (List-Unsubscribe and its pair): these win. */
  headers?: Record<string, string>;
  attachmentSetId?: string | null;
  /** The delivery workflow recorded as its owner (the sweep restarts it under this id); null when the scheduler sets it. */
  deliveryWorkflowId?: string | null;
}

export interface ComposedEmail {
  email: NewEmail;
  rendered: RenderedEmail;
}

/**
 * The one way an email for one recipient is rendered and recorded: its signed links, the contract
 * 7 variables, the renderer (tracking as configured), the recipient rule, and the row (QUEUED, or
 * SUPPRESSED with the reason; Message-ID `<id@sender domain>`). Throws TemplateRenderError when the
 * template does not render for this recipient's data (each caller maps it).
 */
export function composeEmail(config: ComposerConfig, input: EmailToCompose): ComposedEmail {
  const { id, content, sender, recipient, personalisation, owners } = input;
  const links = emailLinks(config.publicUrl, config.secret, { emailId: id, contactId: personalisation.linkContactId });
  const tracking = { opens: config.trackOpens, clicks: config.trackClicks };
  let rendered: RenderedEmail;
  if (content.kind === 'message') {
    rendered = content.html
      ? renderPrepared(literalTemplate({ subject: content.subject, body: content.html, type: content.type }, tracking), {}, links)
      : { subject: singleLineSubject(content.subject), html: '', text: content.text ?? '', headers: {} };
    if (content.text !== null) rendered.text = content.text;
  } else {
    // Compiled, checked and prepared once per template (cached by content): only the recipient's part is done here.
    const template = preparedTemplate(content, tracking);
    rendered = renderPrepared(template, templateVariables(personalisation.contact, personalisation.requestData, links), links);
  }
  const refusal = recipientRefusal({ type: content.type }, { suppressed: recipient.suppressed, subscribed: recipient.subscribed });
  const email: NewEmail = {
    id,
    projectId: input.projectId,
    contactId: recipient.contactId,
    templateId: owners.templateId,
    campaignId: owners.campaignId ?? null,
    workflowExecutionId: owners.workflowExecutionId ?? null,
    source: input.source,
    type: content.type,
    subject: rendered.subject,
    fromAddress: sender.fromAddress,
    fromName: sender.fromName,
    replyTo: sender.replyTo,
    toAddress: recipient.toAddress,
    toName: recipient.toName,
    html: content.kind === 'message' && !content.html ? null : rendered.html,
    text: content.kind === 'message' ? rendered.text || null : rendered.text,
    headers: input.headers ? { ...rendered.headers, ...input.headers } : rendered.headers,
    attachmentSetId: input.attachmentSetId ?? null,
    status: refusal ? 'SUPPRESSED' : 'QUEUED',
    error: refusal,
    messageId: `<${id}@${sender.domain}>`,
    deliveryWorkflowId: input.deliveryWorkflowId ?? null,
  };
  return { email, rendered };
}
