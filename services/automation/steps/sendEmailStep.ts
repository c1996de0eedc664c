import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { DeliveryServices } from '../../sending/recordedEmailDelivery';
import { deliverRecordedEmails } from '../../sending/recordedEmailDelivery';
import { emailRepository, type NewEmail } from '../../../db/emails/emailRepository';
import { composeEmail } from '../../sending/emailComposer';
import { templateRepository } from '../../../db/templates/templateRepository';
import { domainRepository } from '../../../db/domains/domainRepository';
import { TemplateRenderError } from '../../../mail/rendering/renderEmail';
import { deliveryWorkflowIds } from '../../../temporal/deliveryWorkflowStart';
import type { ContactRow } from '../../../db/contacts/contactRepository';
import { StepConfigError } from '../stepConfigs';
import { recordCountedEmails } from '../../billing/countedEmails';
import { BillingLimitExceeded } from '../../billing/usageCaps';
import { projectRepository } from '../../../db/repositories/projectRepository';

const EMAIL_SHAPE = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;

/**
 * The id of the email a SEND_EMAIL step records at one position of one execution: derived, so a
 * repeated step (a retried activity) finds the email it recorded instead of recording a second.
 */
export function automationEmailId(executionId: string, sequence: number): string {
  const hash = crypto.createHash('sha256').update(`workflow-email:${executionId}:${sequence}`).digest();
  hash[6] = (hash[6] & 0x0f) | 0x40;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export interface SendEmailStepResult {
  emailId: string;
  to: string;
  /** What happened to it: SENT, SUPPRESSED (refused by the recipient rule), FAILED, or QUEUED (handed to retries). */
  status: string;
  /** Emails to retry later (a temporary failure): the workflow hands them to a delivery workflow. */
  retry: string[];
}

/**
 * SEND_EMAIL `{ templateId, recipient?: { type: "CONTACT"|"CUSTOM", customEmail? } }`: renders the
 * template with the contact's data and the execution's context through the one renderer, records
 * the email (source WORKFLOW, with the execution) under the recipient rule (suppressed: nothing;
 * unsubscribed: no MARKETING), and delivers it through the one delivery path. A disabled
 * project's step sends nothing and stops the execution (FAILED, the reason in its error), as its
 * API sends answer 403 PROJECT_DISABLED and its campaigns stop.
 */
export async function sendEmailStep(
  em: EntityManager,
  services: DeliveryServices,
  input: {
    projectId: string;
    executionId: string;
    sequence: number;
    contact: ContactRow;
    context: Record<string, unknown>;
    config: Record<string, unknown>;
    templateId: string | null;
  },
): Promise<SendEmailStepResult> {
  const { config } = services;
  const disabled = await projectRepository.disabledState(em, input.projectId);
  if (disabled) {
    throw new StepConfigError(
      `PROJECT_DISABLED: the project is disabled${disabled.disabledReason === 'PAYMENT_FAILED' ? ' because its last payment failed' : ''}; nothing was sent`,
    );
  }
  const templateId = input.templateId ?? (typeof input.config.templateId === 'string' ? input.config.templateId : null);
  if (!templateId) throw new StepConfigError('SEND_EMAIL needs a templateId');
  const template = await templateRepository.findById(em, input.projectId, templateId);
  if (!template) throw new StepConfigError(`The template ${templateId} no longer exists`);

  const recipient = (input.config.recipient ?? {}) as { type?: string; customEmail?: unknown };
  const custom = recipient.type === 'CUSTOM';
  let to = input.contact.email;
  if (custom) {
    if (typeof recipient.customEmail !== 'string' || !EMAIL_SHAPE.test(recipient.customEmail.trim()))
      throw new StepConfigError('SEND_EMAIL recipient CUSTOM needs a valid customEmail');
    to = recipient.customEmail.trim().toLowerCase();
  }

  const id = automationEmailId(input.executionId, input.sequence);
  const domain = await domainRepository.findSigningDomain(em, input.projectId, template.from);
  const suppressed = await emailRepository.suppressedAddresses(em, input.projectId, [to]);
  let email: NewEmail;
  try {
    ({ email } = composeEmail(config, {
      id,
      projectId: input.projectId,
      source: 'WORKFLOW',
      content: { subject: template.subject, body: template.body, type: template.type },
      sender: { fromAddress: template.from, fromName: template.fromName, replyTo: template.replyTo, domain: domain?.domain ?? template.from.split('@')[1] },
      // A custom recipient is not the contact: only the suppression list speaks for that address.
      recipient: {
        toAddress: to,
        toName: null,
        contactId: custom ? null : input.contact.id,
        suppressed: suppressed.has(to),
        subscribed: custom || input.contact.subscribed,
      },
      // Rendered with the contact's data and links and the execution's context, whoever it goes to.
      personalisation: { contact: input.contact, requestData: input.context, linkContactId: input.contact.id },
      owners: { templateId: template.id, workflowExecutionId: input.executionId },
      // The delivery sweep's id for it, should this step die between recording and delivering.
      deliveryWorkflowId: deliveryWorkflowIds.single(id),
    }));
  } catch (err) {
    if (err instanceof TemplateRenderError) throw new StepConfigError(err.message);
    throw err;
  }
  let recordedNow: boolean;
  try {
    // Counted against the project's monthly `workflows` cap in the transaction that records it.
    recordedNow = (await recordCountedEmails(em, [email], { skipExistingIds: true })).has(id);
  } catch (err) {
    // A full cap stops the execution (FAILED, the reason in its error): nothing was recorded or sent.
    if (err instanceof BillingLimitExceeded) throw new StepConfigError(`BILLING_LIMIT_EXCEEDED: ${err.message}`);
    throw err;
  }
  // Recorded just now: delivery takes this moment's recipient rule and sender domain. A repeated
  // step finding its email recorded earlier lets delivery check both again.
  const result = await deliverRecordedEmails(
    services,
    [id],
    `execution-${input.executionId}/${input.sequence}`,
    recordedNow ? { justRecorded: { senderDomain: { projectId: input.projectId, fromAddress: template.from, domain } } } : {},
  );
  const status = result.retry.length ? 'QUEUED' : result.sent ? 'SENT' : result.failed ? 'FAILED' : result.suppressed ? 'SUPPRESSED' : null;
  // Nothing to deliver: recorded SUPPRESSED just now, or a repeated step finding its email already sent.
  return { emailId: id, to, status: status ?? (await emailRepository.findById(em, input.projectId, id))?.status ?? email.status, retry: result.retry };
}
