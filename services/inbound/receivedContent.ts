import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailRow } from '../../db/emails/emailRepository';
import { inboundMessageRepository } from '../../db/inbound/inboundMessageRepository';
import { readReceivedMessage, sanitizeReceivedHtml } from './receivedMessage';

/** What GET /emails/:id adds for a received email (contract 20). */
export interface ReceivedContent {
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  attachments: Array<{ index: number; filename: string | null; contentType: string; size: number }>;
}

/**
 * The content of a received email, read from the one stored copy of its message (the raw bytes
 * are the record; nothing parsed is stored twice). Empty once retention removed the message.
 */
export async function receivedContent(em: EntityManager, email: EmailRow): Promise<ReceivedContent> {
  const raw = email.inboundMessageId ? await inboundMessageRepository.raw(em, email.inboundMessageId) : null;
  if (!raw) return { text: null, html: null, headers: [], attachments: [] };
  const message = await readReceivedMessage(raw);
  return {
    text: message.text,
    html: message.html === null ? null : sanitizeReceivedHtml(message.html),
    headers: message.headers,
    attachments: message.attachments.map(({ index, filename, contentType, size }) => ({ index, filename, contentType, size })),
  };
}

/** One attachment of a received email; null when there is no such attachment (or no content any more). */
export async function receivedAttachment(
  em: EntityManager,
  email: EmailRow,
  index: number,
): Promise<{ contentType: string; filename: string | null; content: Buffer } | null> {
  const raw = email.inboundMessageId ? await inboundMessageRepository.raw(em, email.inboundMessageId) : null;
  if (!raw) return null;
  const attachment = (await readReceivedMessage(raw)).attachments[index];
  return attachment ? { contentType: attachment.contentType, filename: attachment.filename, content: attachment.content } : null;
}

/** The message exactly as it was received (GET /emails/:id/raw); null once retention removed it. */
export async function receivedRaw(em: EntityManager, email: EmailRow): Promise<Buffer | null> {
  return email.inboundMessageId ? inboundMessageRepository.raw(em, email.inboundMessageId) : null;
}
