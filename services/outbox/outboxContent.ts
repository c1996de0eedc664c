import type { EntityManager } from '@mikro-orm/postgresql';
import { outboxRepository } from '../../db/outbox/outboxRepository';
import type { OutboxMessage } from '../../db/entities/outboxMessage';
import { readReceivedMessage } from '../inbound/receivedMessage';
import { mailPreview, type MailPreview } from '../emails/emailViews';

/**
 * A message the local outbox caught (contract 9), read as a mail client would read it, with the
 * same MIME parser as received mail (mailparser, services/inbound/receivedMessage.ts). Its HTML
 * is the project's own, as it would have been sent (tracking included), not sanitised: clients
 * show it in a sandbox (the dashboard: contract 21).
 */
export interface OutboxContent {
  message: Omit<OutboxMessage, 'raw'>;
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  attachments: Array<{ index: number; filename: string | null; contentType: string; size: number }>;
}

async function readOutboxMessage(em: EntityManager, projectId: string, id: string) {
  const row = await outboxRepository.find(em, projectId, id);
  if (!row) return null;
  const { raw, ...message } = row;
  return { message, parsed: await readReceivedMessage(Buffer.from(raw as Uint8Array)) };
}

/** GET /outbox/:id: the message's parts; null when the project has no such message. */
export async function outboxContent(em: EntityManager, projectId: string, id: string): Promise<OutboxContent | null> {
  const found = await readOutboxMessage(em, projectId, id);
  if (!found) return null;
  const { parsed, message } = found;
  return {
    message,
    text: parsed.text,
    html: parsed.html,
    headers: parsed.headers,
    attachments: parsed.attachments.map(({ index, filename, contentType, size }) => ({ index, filename, contentType, size })),
  };
}

/** GET /outbox/:id/preview: the message as a person looks at it (no open pixel, links at their targets). */
export async function outboxPreview(em: EntityManager, projectId: string, id: string, secret: string): Promise<MailPreview | null> {
  const found = await readOutboxMessage(em, projectId, id);
  return found ? mailPreview({ html: found.parsed.html, text: found.parsed.text }, secret) : null;
}

/** GET /outbox/:id/attachments/:index: one attachment's bytes; null when there is no such message or attachment. */
export async function outboxAttachment(
  em: EntityManager,
  projectId: string,
  id: string,
  index: number,
): Promise<{ contentType: string; filename: string | null; content: Buffer } | null> {
  const found = await readOutboxMessage(em, projectId, id);
  const attachment = found?.parsed.attachments[index];
  return attachment ? { contentType: attachment.contentType, filename: attachment.filename, content: attachment.content } : null;
}
