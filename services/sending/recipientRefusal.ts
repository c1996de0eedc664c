import type { EmailType } from '../../db/emails/emailRepository';

/**
 * Why an email may not go to its recipient, or null when it may (contract 9): a suppressed
 * address (a hard bounce or a complaint) gets no mail at all; an unsubscribed contact gets no
 * MARKETING mail. The one statement of the rule, applied when mail is accepted (/v1/send, a
 * campaign batch) and again just before it is sent.
 */
export function recipientRefusal(email: { type: EmailType }, recipient: { suppressed: boolean; subscribed: boolean }): string | null {
  if (recipient.suppressed) return 'The address is suppressed after a hard bounce or a complaint';
  if (email.type === 'MARKETING' && !recipient.subscribed) return 'The contact is unsubscribed';
  return null;
}
