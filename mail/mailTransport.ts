import nodemailer from 'nodemailer';
import type { Orm } from '../db/orm';
import { OutboxMessageSchema } from '../db/entities/outboxMessage';
import type { Logger } from '../lib/logger';
import type { OutgoingMail } from './mime/outgoingMail';
import { buildMessage, type BuiltMessage } from './mime/messageBuilder';
import { displayMailbox } from './mime/headerFields';

export type { OutgoingMail } from './mime/outgoingMail';

export interface SentMail {
  messageId: string;
  accepted: string[];
  rejected: string[];
  response: string;
  /** Set when the outbox captured the message. */
  outboxId?: string;
}

/** A failed hand-over. `permanent` (an SMTP 5xx) means retrying cannot help. */
export class MailDeliveryError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly responseCode?: number,
  ) {
    super(message);
    this.name = 'MailDeliveryError';
  }
}

/**
 * The one way mail leaves Mailroom. Every message is built and DKIM-signed by mail/mime's
 * builder; with SMTP_URL set, its bytes go out over a pooled nodemailer SMTP transport as they
 * are; without, they are kept in the local outbox (contract 9), readable at GET /outbox.
 */
export interface MailTransport {
  readonly kind: 'smtp' | 'outbox';
  send(mail: OutgoingMail): Promise<SentMail>;
  close(): Promise<void>;
}

/** The message's bytes; a mail that cannot be built (no From address) can never be sent, so that is a permanent failure. */
function built(mail: OutgoingMail): BuiltMessage {
  try {
    return buildMessage(mail);
  } catch (err) {
    throw new MailDeliveryError(`The message could not be built: ${(err as Error).message}`, true);
  }
}

function addressList(value: unknown): string[] {
  return Array.isArray(value) ? value.map((v) => (typeof v === 'string' ? v : String((v as { address?: string }).address ?? v))) : [];
}

export function createSmtpTransport(smtpUrl: string, logger: Logger, maxConnections = 5): MailTransport {
  const transporter = nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections,
    maxMessages: 500,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
  } as never);
  return {
    kind: 'smtp',
    async send(mail) {
      const message = built(mail);
      try {
        // `raw` goes out byte for byte (nodemailer wraps it in a message/rfc822 node and streams it
        // unchanged); the envelope names MAIL FROM and RCPT TO, as nodemailer derived them from
        // From and To before. messageId only names the message in nodemailer's logs.
        const info = await transporter.sendMail({ envelope: message.envelope, raw: message.raw, messageId: message.messageId });
        return {
          messageId: message.messageId,
          accepted: addressList(info.accepted),
          rejected: addressList(info.rejected),
          response: String(info.response ?? ''),
        };
      } catch (err) {
        const e = err as { message?: string; responseCode?: number; code?: string };
        const permanent = typeof e.responseCode === 'number' && e.responseCode >= 500 && e.responseCode < 600;
        logger.warn({ err: e.message, responseCode: e.responseCode, code: e.code, messageId: mail.messageId }, 'smtp hand-over failed');
        throw new MailDeliveryError(e.message ?? 'SMTP delivery failed', permanent, e.responseCode);
      }
    },
    async close() {
      transporter.close();
    },
  };
}

export function createOutboxTransport(orm: Orm, logger: Logger): MailTransport {
  return {
    kind: 'outbox',
    async send(mail) {
      // The same bytes (DKIM signature included) that SMTP would carry.
      const message = built(mail);
      const raw = message.raw;
      const em = orm.em.fork();
      const row = em.create(OutboxMessageSchema, {
        projectId: mail.projectId,
        messageId: message.messageId,
        from: typeof mail.from === 'string' ? mail.from : `${mail.from.name} <${mail.from.address}>`,
        to: mail.to.map((to) => (typeof to === 'string' ? to : displayMailbox(to))),
        subject: mail.subject,
        raw,
        size: raw.length,
      });
      await em.flush();
      logger.info({ outboxId: row.id, projectId: mail.projectId, to: message.envelope.to, subject: mail.subject }, 'mail captured in the local outbox');
      return { messageId: row.messageId, accepted: message.envelope.to, rejected: [], response: 'captured in the local outbox', outboxId: row.id };
    },
    async close() {},
  };
}

export function createMailTransport(options: { smtpUrl?: string; orm: Orm; logger: Logger; maxConnections?: number }): MailTransport {
  return options.smtpUrl ? createSmtpTransport(options.smtpUrl, options.logger, options.maxConnections) : createOutboxTransport(options.orm, options.logger);
}
