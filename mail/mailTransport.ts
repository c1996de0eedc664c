import type { KeyObject } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { Orm } from '../db/orm';
import { OutboxMessageSchema } from '../db/entities/outboxMessage';
import type { Logger } from '../lib/logger';

/**
 * The one way mail leaves Mailroom. With SMTP_URL set it is a pooled nodemailer SMTP transport;
 * without, every message is rendered to MIME exactly as it would be sent and kept in the local
 * outbox (contract 9), readable at GET /outbox.
 */
export interface OutgoingMail {
  /** The project the mail belongs to; null for Mailroom's own account mail. */
  projectId: string | null;
  /** An address, or a display name and address (nodemailer encodes the name). */
  from: string | { name: string; address: string };
  to: string[];
  replyTo?: string;
  subject: string;
  html?: string;
  text?: string;
  headers?: Record<string, string>;
  /** Deterministic per email (`<id@host>`), so a retried delivery can be recognised as the same message. */
  messageId: string;
  attachments?: Array<{ filename: string; content: Buffer; contentType?: string; cid?: string; contentDisposition?: 'attachment' | 'inline' }>;
  dkim?: { domainName: string; keySelector: string; privateKey: string | KeyObject; headerFieldNames?: string };
}

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

export interface MailTransport {
  readonly kind: 'smtp' | 'outbox';
  send(mail: OutgoingMail): Promise<SentMail>;
  close(): Promise<void>;
}

function toNodemailerMessage(mail: OutgoingMail) {
  return {
    from: mail.from,
    to: mail.to,
    replyTo: mail.replyTo,
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    headers: mail.headers,
    messageId: mail.messageId,
    attachments: mail.attachments,
    dkim: mail.dkim,
  };
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
      try {
        const info = await transporter.sendMail(toNodemailerMessage(mail));
        return {
          messageId: info.messageId ?? mail.messageId,
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
  // Builds the same MIME (DKIM signature included) that SMTP would carry, without sending it.
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  return {
    kind: 'outbox',
    async send(mail) {
      const info = await composer.sendMail(toNodemailerMessage(mail));
      const raw = info.message as Buffer;
      const em = orm.em.fork();
      const row = em.create(OutboxMessageSchema, {
        projectId: mail.projectId,
        messageId: info.messageId ?? mail.messageId,
        from: typeof mail.from === 'string' ? mail.from : `${mail.from.name} <${mail.from.address}>`,
        to: mail.to,
        subject: mail.subject,
        raw,
        size: raw.length,
      });
      await em.flush();
      logger.info({ outboxId: row.id, projectId: mail.projectId, to: mail.to, subject: mail.subject }, 'mail captured in the local outbox');
      return { messageId: row.messageId, accepted: mail.to, rejected: [], response: 'captured in the local outbox', outboxId: row.id };
    },
    async close() {},
  };
}

export function createMailTransport(options: { smtpUrl?: string; orm: Orm; logger: Logger; maxConnections?: number }): MailTransport {
  return options.smtpUrl ? createSmtpTransport(options.smtpUrl, options.logger, options.maxConnections) : createOutboxTransport(options.orm, options.logger);
}
