import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailRow } from '../../db/emails/emailRepository';
import { remoteImageCount, untrackedHtml } from '../../mail/rendering/untrackedView';
import { receivedContent, type ReceivedContent } from '../inbound/receivedContent';

/**
 * What GET /emails/:id adds to the record (contract 21, "mail as it was sent"): a sent email's
 * HTML and text parts exactly as they were handed over, tracking included (null where the email
 * has no such part); a received email's content as contract 20 shows it.
 */
export type EmailContent = Pick<ReceivedContent, 'html' | 'text'> & Partial<Omit<ReceivedContent, 'html' | 'text'>>;

export async function emailContent(em: EntityManager, email: EmailRow): Promise<EmailContent> {
  if (email.source === 'INBOUND') return receivedContent(em, email);
  return { html: email.html, text: email.text };
}

/** An email (or outbox message) as a person looks at it: see mailPreview(). */
export interface MailPreview {
  html: string | null;
  text: string | null;
  /** Images of `html` that a mail client would fetch from another host (http or https `src`). */
  remoteImages: number;
}

/**
 * Contract 21, "looking is not opening": the parts of a message made for looking at, so viewing
 * records no open and clicking records no click: without the open pixel, with every click
 * redirect pointing at its target again (mail/rendering/untrackedView.ts). The text part never
 * carries tracking. Received HTML is the sanitised copy of contract 20.
 */
export function mailPreview(parts: { html: string | null; text: string | null }, secret: string): MailPreview {
  const html = parts.html === null ? null : untrackedHtml(parts.html, secret);
  return { html, text: parts.text, remoteImages: html === null ? 0 : remoteImageCount(html) };
}

/** GET /emails/:id/preview: the email's parts as mailPreview() makes them. */
export async function emailPreview(em: EntityManager, email: EmailRow, secret: string): Promise<MailPreview> {
  const { html, text } = await emailContent(em, email);
  return mailPreview({ html, text }, secret);
}
