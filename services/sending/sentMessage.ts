import type { EntityManager } from '@mikro-orm/postgresql';
import { emailRepository, type EmailRow } from '../../db/emails/emailRepository';
import { recordedEmailMail } from '../../mail/delivery/emailSender';
import { buildMessage } from '../../mail/mime/messageBuilder';

/**
 * The message an email was handed to the relay as, byte for byte (contract 20, GET /emails/:id/raw),
 * or null when none was offered yet (queued, suppressed, failed before an attempt). The bytes are
 * not stored: the row, its attachments and the stamp its delivery recorded (date, boundaries,
 * DKIM-Signature) make the same builder write them again (mail/mime/messageBuilder.ts).
 * `email` must be read with its content (emailRepository.findById).
 */
export async function sentMessage(em: EntityManager, email: EmailRow): Promise<Buffer | null> {
  const stamp = email.messageStamp;
  if (!stamp) return null;
  const attachments = email.attachmentSetId ? await emailRepository.attachments(em, email.attachmentSetId) : [];
  // No key: the stamp's DKIM-Signature is the one that went out, a new signature would differ.
  return buildMessage(recordedEmailMail(email, { dkim: null, attachments }), { stamp }).raw;
}
