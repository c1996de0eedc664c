import os from 'node:os';
import type { Orm } from '../../db/orm';
import type { EventTriggers } from '../events/eventTriggers';
import type { DnsResolver } from '../../lib/dns/dnsResolver';
import type { RecordedEvent } from '../../db/contacts/contactRepository';
import type { InboundAuthResults } from '../../db/emails/emailRepository';
import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';
import { contactRepository } from '../../db/contacts/contactRepository';
import { inboundEmailRepository, type InboundEmailToRecord } from '../../db/emails/inboundEmailRepository';
import { inboundMessageRepository, type InboundMessageRow } from '../../db/inbound/inboundMessageRepository';
import { usageCaps } from '../billing/usageCaps';
import { authenticateMessage, providerAuthResults } from './messageAuthentication';
import { readReceivedMessage } from './receivedMessage';
import { receivedEventData, receivedMessageData } from './receivedEventData';
import { applyDeliveryReport } from './deliveryReports';

export interface InboundProcessingServices {
  orm: Orm;
  eventTriggers: EventTriggers;
  dns: DnsResolver;
  /** RETURN_PATH_SUBDOMAIN: how a delivery report sent to a return-path address names its email. */
  returnPathSubdomain: string;
  logger: { info: (obj: object, msg: string) => void };
}

/** Messages of one batch read and authenticated at once (each waits mostly on DNS and the database). */
const CONCURRENCY = 8;
/** Copies one recording transaction writes at most: the project's counter row is locked once per transaction, not per copy. */
const COPIES_PER_TRANSACTION = 50;

const plainAddress = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;

/** What recording needs of a read message: the big parts (attachments, HTML) are not kept past reading. */
interface PreparedCopy {
  projectId: string;
  inboundMessageId: string;
  sender: string | null;
  fromName: string | null;
  toAddress: string;
  subject: string;
  messageId: string;
  auth: InboundAuthResults;
  /** Null for an Auto-Submitted message: recorded, no email.received. */
  eventData: ((copy: { emailId: string; from: string; to: string; auth: InboundAuthResults }) => Record<string, unknown>) | null;
}

/**
 * Processes stored messages (contract 20, "Mail in"), any number of times: each project's copy of
 * each recipient is recorded at most once (the unique key on the message, project and recipient),
 * so a retried activity or a sweep's second start records nothing twice. Messages are read and
 * authenticated CONCURRENCY at a time; then each project's copies are recorded in transactions of
 * up to COPIES_PER_TRANSACTION, so concurrent copies do not queue on the project's counter row.
 * `onProgress` is called after each message read and each transaction (the activity's heartbeat).
 */
export async function processInboundMessages(services: InboundProcessingServices, messageIds: string[], onProgress?: () => void): Promise<number> {
  let next = 0;
  const read: string[] = [];
  const copies: PreparedCopy[] = [];
  const worker = async () => {
    while (next < messageIds.length) {
      const id = messageIds[next++];
      const stored = await inboundMessageRepository.findById(services.orm.em.fork(), id);
      if (stored && stored.status === 'RECEIVED') {
        copies.push(...(await prepare(services, stored)));
        read.push(id);
      }
      onProgress?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, messageIds.length) }, worker));

  const byProject = new Map<string, PreparedCopy[]>();
  for (const copy of copies) byProject.set(copy.projectId, [...(byProject.get(copy.projectId) ?? []), copy]);
  for (const [projectId, list] of byProject) {
    for (let i = 0; i < list.length; i += COPIES_PER_TRANSACTION) {
      const events = await recordCopies(services, projectId, list.slice(i, i + COPIES_PER_TRANSACTION));
      // Automations and the other listeners see it like every event (a listener's failure never undoes it).
      await services.eventTriggers.afterEventsRecorded(projectId, events);
      onProgress?.();
    }
  }
  await inboundMessageRepository.markProcessed(services.orm.em.fork(), read);
  return read.length;
}

/** Reads and authenticates one message; its copies, one per project and recipient, less the projects that took it as a delivery report. */
async function prepare(services: InboundProcessingServices, stored: InboundMessageRow): Promise<PreparedCopy[]> {
  const raw = stored.raw ?? Buffer.alloc(0);
  const envelope = stored.envelope;
  const message = await readReceivedMessage(raw);
  const auth = envelope.provider ? providerAuthResults(envelope.provider.verdicts) : await authenticateMessage(raw, envelope, services.dns, os.hostname());
  const senderCandidate = (envelope.mailFrom || message.fromAddress || '').trim().toLowerCase();
  const sender = plainAddress.test(senderCandidate) ? senderCandidate : null;
  const projectIds = [...new Set(envelope.recipients.flatMap((r) => r.projectIds))].sort();
  // What the event says of the message, worked out once for all its copies (and before any transaction).
  const messageData = message.autoSubmitted ? null : receivedMessageData(message);
  const copies: PreparedCopy[] = [];
  for (const projectId of projectIds) {
    // ── The DSN / ARF classifier plugs in here (services/inbound/deliveryReports.ts) ──
    const recipients = envelope.recipients.filter((r) => r.projectIds.includes(projectId)).map((r) => r.address);
    if (await applyDeliveryReport(services, services.orm.em.fork(), { projectId, raw, recipients })) continue;
    for (const recipient of envelope.recipients.filter((r) => r.projectIds.includes(projectId))) {
      copies.push({
        projectId,
        inboundMessageId: stored.id,
        sender,
        fromName: message.fromName,
        toAddress: recipient.address,
        subject: message.subject,
        messageId: message.messageId,
        auth,
        eventData: messageData ? (copy) => receivedEventData(messageData, copy) : null,
      });
    }
  }
  return copies;
}

/** What a copy past the project's `inbound` cap says on its record. */
const pastCapReason = (limit: number) =>
  `Recorded without email.received: the project's inbound cap of ${limit} emails this month (UTC) is reached. ` +
  `Raise or lift it with PUT /users/@me/projects/:id/billing-limits.`;

/**
 * One transaction: the senders' contacts, the copies not recorded yet, their count and their
 * events. A copy past the project's `inbound` cap is recorded and counted (the message was taken:
 * SES cannot be asked to keep it, and the listener's RCPT sees only counted messages, so the
 * messages it let in before the one that reached the cap was counted here can pass it) but fires
 * no email.received, and its record says why (contract 20). With a cap, the counter row is
 * locked first, so concurrent transactions of the project see each other's copies; without one
 * it is locked last (by `add`), so they do not queue on it. (A cap set while two transactions of
 * a project run can make them wait on each other; PostgreSQL ends one as a deadlock and the
 * activity retries it.)
 */
async function recordCopies(services: InboundProcessingServices, projectId: string, copies: PreparedCopy[]): Promise<RecordedEvent[]> {
  return services.orm.em.fork().transactional(async (tx) => {
    const room = await usageCaps.headroom(tx, projectId, 'inbound');
    const senders = [...new Set(copies.map((c) => c.sender).filter((s): s is string => s !== null))];
    // Receiving a message is not consent to marketing: a new contact is unsubscribed, an existing one keeps its state.
    const contacts = await contactRepository.upsertByEmail(
      tx,
      projectId,
      senders.map((email) => ({ email, subscribedIfNew: false, data: { set: {}, unset: [], oneShot: {} } })),
      'inbound',
    );
    const contactOf = new Map(senders.map((email, i) => [email, contacts[i].contact.id]));
    // A retried activity finds some copies recorded: they are neither recorded nor counted again.
    const recorded = await inboundEmailRepository.alreadyRecorded(tx, projectId, copies);
    const toRecord: InboundEmailToRecord[] = [];
    for (const copy of copies) {
      if (recorded.has(`${copy.inboundMessageId} ${copy.toAddress.toLowerCase()}`)) continue;
      const fromAddress = copy.sender ?? '';
      const pastCap = room !== null && room.left-- <= 0;
      const id = newTimeOrderedId();
      const contactId = copy.sender ? (contactOf.get(copy.sender) ?? null) : null;
      const eventData = pastCap || !copy.eventData ? null : copy.eventData({ emailId: id, from: fromAddress, to: copy.toAddress, auth: copy.auth });
      toRecord.push({
        copy: {
          id,
          projectId,
          inboundMessageId: copy.inboundMessageId,
          contactId,
          fromAddress,
          fromName: copy.fromName,
          toAddress: copy.toAddress,
          subject: copy.subject,
          messageId: copy.messageId,
          auth: copy.auth,
          error: pastCap && copy.eventData ? pastCapReason(room.limit) : null,
        },
        eventData,
      });
    }
    const { created, events } = await inboundEmailRepository.recordMany(tx, toRecord);
    await usageCaps.add(tx, projectId, 'inbound', created);
    return events;
  });
}
