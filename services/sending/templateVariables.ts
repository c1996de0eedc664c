import type { EmailLinks } from '../../mail/links/signedLinks';
import { requestVariables, splitDataChanges } from '../contacts/contactDataRules';

/**
 * Contract 7 variables: every contact data key at top level and under `data.`, the request's
 * data over it (applied by the contact data rules, so raw request data works: one-shot
 * `{ value, persistent: false }` values are unwrapped, `""` changes nothing, `null` clears), then
 * the reserved names, which win: id, email, mailroom_id, mailroom_email and the three links
 * (empty strings when no links are given). `data` itself is reserved for the data object.
 * Objects are copied one level deep only, so deeply nested data costs nothing here.
 */
export function templateVariables(
  contact: { id: string; email: string; data: Record<string, unknown> },
  requestData: Record<string, unknown>,
  links?: EmailLinks,
): Record<string, unknown> {
  const data = requestVariables(contact.data ?? {}, splitDataChanges(requestData));
  return {
    ...data,
    data,
    id: contact.id,
    email: contact.email,
    mailroom_id: contact.id,
    mailroom_email: contact.email,
    unsubscribeUrl: links?.unsubscribeUrl ?? '',
    subscribeUrl: links?.subscribeUrl ?? '',
    manageUrl: links?.manageUrl ?? '',
  };
}
