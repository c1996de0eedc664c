import type { Orm } from '../db/orm';
import { OutboxMessageSchema } from '../db/entities/outboxMessage';
import type { Logger } from '../lib/logger';
import type { OutgoingMail } from './mime/outgoingMail';
import type { BuiltMessage, MessageStamp } from './mime/messageBuilder';
import { createMessageBuilder, type MessageBuilder } from './mime/messageBuildPool';
import { createSmtpRelayPool, type RelayError } from './smtp/smtpRelayPool';
import { displayMailbox } from './mime/headerFields';

export type { OutgoingMail } from './mime/outgoingMail';
export type { MessageStamp } from './mime/messageBuilder';

export interface SentMail {
  messageId: string;
  accepted: string[];
  rejected: string[];
  response: string;
  /** Set when the outbox captured the message. */
  outboxId?: string;
  /** What makes the bytes handed over reproducible from the mail (mail/mime/messageBuilder.ts). */
  stamp: MessageStamp;
}

/**
 * A failed hand-over. `permanent` (an SMTP 5xx) means retrying cannot help. `stamp` is set when
 * the relay received the message's data and refused it, not when it refused the envelope or the
 * message could not be built.
 */
export class MailDeliveryError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly responseCode?: number,
    readonly stamp?: MessageStamp,
  ) {
    super(message);
    this.name = 'MailDeliveryError';
  }
}

/**
 * The one way mail leaves Mailroom. Every message is built and DKIM-signed by mail/mime's
 * builder; with SMTP_URL set, its bytes go out as they are over a pool of SMTP connections
 * (smtp/smtpRelayPool.ts); without, they are kept in the local outbox (contract 9), readable at GET /outbox.
 */
export interface MailTransport {
  readonly kind: 'smtp' | 'outbox';
  send(mail: OutgoingMail): Promise<SentMail>;
  /**
   * Builds and signs `mail` as `send` would, without handing it over: a campaign wave records
   * each message's stamp before its mail leaves. Throws MailDeliveryError (permanent) as `send` does.
   */
  build(mail: OutgoingMail): Promise<BuiltMessage>;
  /** Hands over `message`, which `build` made from `mail` (or the builder rebuilt from its stamp), as `send` does once built. */
  sendBuilt(mail: OutgoingMail, message: BuiltMessage): Promise<SentMail>;
  close(): Promise<void>;
}

/** The message's bytes; a mail that cannot be built (no From address) can never be sent, so that is a permanent failure. */
async function built(builder: MessageBuilder, mail: OutgoingMail): Promise<BuiltMessage> {
  try {
    return await builder.build(mail);
  } catch (err) {
    throw new MailDeliveryError(`The message could not be built: ${(err as Error).message}`, true);
  }
}

/** Builds on the caller's thread: for a transport given no builder of its own. */
const inlineBuilder = createMessageBuilder(0);

export function createSmtpTransport(smtpUrl: string, logger: Logger, maxConnections = 5, builder: MessageBuilder = inlineBuilder): MailTransport {
  const relay = createSmtpRelayPool(
    smtpUrl,
    { maxConnections, maxMessages: 500, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 60_000 },
    logger,
  );
  const transport: MailTransport = {
    kind: 'smtp',
    async send(mail) {
      return transport.sendBuilt(mail, await built(builder, mail));
    },
    build: (mail) => built(builder, mail),
    async sendBuilt(mail, message) {
      try {
        // The bytes go out as built; the envelope names MAIL FROM (the From address) and RCPT TO.
        const answer = await relay.send({ envelope: message.envelope, raw: message.raw });
        return { messageId: message.messageId, accepted: answer.accepted, rejected: answer.rejected, response: answer.response, stamp: message.stamp };
      } catch (err) {
        const e = err as RelayError;
        const permanent = typeof e.responseCode === 'number' && e.responseCode >= 500 && e.responseCode < 600;
        logger.warn({ err: e.message, responseCode: e.responseCode, code: e.code, messageId: mail.messageId }, 'smtp hand-over failed');
        // Refused at the end of DATA (nodemailer's EMESSAGE), the relay had the whole message: it can be shown.
        throw new MailDeliveryError(
          e.message ?? 'SMTP delivery failed',
          permanent,
          e.responseCode,
          e.code === 'EMESSAGE' && e.command === 'DATA' ? message.stamp : undefined,
        );
      }
    },
    async close() {
      relay.close();
    },
  };
  return transport;
}

export function createOutboxTransport(orm: Orm, logger: Logger, builder: MessageBuilder = inlineBuilder): MailTransport {
  const transport: MailTransport = {
    kind: 'outbox',
    async send(mail) {
      return transport.sendBuilt(mail, await built(builder, mail));
    },
    build: (mail) => built(builder, mail),
    async sendBuilt(mail, message) {
      // The same bytes (DKIM signature included) that SMTP would carry.
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
      return {
        messageId: row.messageId,
        accepted: message.envelope.to,
        rejected: [],
        response: 'captured in the local outbox',
        outboxId: row.id,
        stamp: message.stamp,
      };
    },
    async close() {},
  };
  return transport;
}

/** `builder`: where messages are built and signed (messageBuildPool.ts); its owner closes it. By default, inline. */
export function createMailTransport(options: { smtpUrl?: string; orm: Orm; logger: Logger; maxConnections?: number; builder?: MessageBuilder }): MailTransport {
  return options.smtpUrl
    ? createSmtpTransport(options.smtpUrl, options.logger, options.maxConnections, options.builder)
    : createOutboxTransport(options.orm, options.logger, options.builder);
}
