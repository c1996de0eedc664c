import type { SmtpListenerSettings } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { MAX_INBOUND_RECIPIENTS } from '../../services/inbound/inboundRecipients';
import type { InboundServices } from '../../services/inbound/inboundReceipt';
import type { InboundRecipient } from '../../db/inbound/inboundMessageRepository';
import { smtpReply, startSmtpListener, type RunningSmtpListener } from './smtpListener';

/**
 * The inbound role of the SMTP listener (contract 20, "Mail in"): mail for verified domains only,
 * no AUTH, SIZE advertised, and 250 to DATA only once the message is stored. RCPT decides who
 * receives (services/inbound/inboundRecipients.ts); what the session learned per recipient
 * travels with the message (the projects, whether it is a return-path address).
 */
export async function startInboundSmtp(
  port: number,
  settings: Pick<SmtpListenerSettings, 'host' | 'tls' | 'idleTimeoutSeconds' | 'inboundMaxBytes'>,
  services: InboundServices,
  logger: Logger,
): Promise<RunningSmtpListener> {
  // What RCPT learned per session, by the session id (the recipients of the current transaction).
  const accepted = new Map<string, InboundRecipient[]>();
  const log = logger.child({ smtp: 'inbound' });

  return startSmtpListener(
    'inbound',
    port,
    settings,
    {
      // Attachments are part of the message: this bounds them too.
      maxBytes: settings.inboundMaxBytes,
      options: {
        authOptional: true,
        disabledCommands: settings.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      },
      onMailFrom(_address, session, callback) {
        accepted.set(session.id, []);
        callback();
      },
      onRcptTo(address, session, callback) {
        const list = accepted.get(session.id) ?? [];
        if (list.length >= MAX_INBOUND_RECIPIENTS) {
          return callback(smtpReply(452, `4.5.3 Too many recipients: at most ${MAX_INBOUND_RECIPIENTS} per message`));
        }
        services.recipients.check(address.address).then(
          (verdict) => {
            if (!verdict.accepted) return callback(smtpReply(verdict.code, verdict.message));
            list.push({ address: verdict.address, projectIds: verdict.projectIds, returnPath: verdict.returnPath });
            accepted.set(session.id, list);
            callback();
          },
          (err: unknown) => {
            log.error({ err }, 'inbound smtp: could not look up a recipient');
            callback(smtpReply(451, '4.3.0 Temporary failure; try again later'));
          },
        );
      },
      async onMessage(raw, session) {
        const recipients = accepted.get(session.id) ?? [];
        accepted.delete(session.id);
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        try {
          const { id } = await services.reception.store(raw, {
            mailFrom,
            recipients,
            remoteAddress: session.remoteAddress,
            helo: session.hostNameAppearsAs ?? '',
          });
          return `2.0.0 Ok: queued as ${id}`;
        } catch (err) {
          log.error({ err }, 'inbound smtp: could not store a message');
          throw smtpReply(451, '4.3.0 Could not store the message; try again later');
        }
      },
      onClose(session) {
        accepted.delete(session.id);
      },
    },
    logger,
  );
}
