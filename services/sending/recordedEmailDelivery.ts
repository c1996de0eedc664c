import type { Orm } from '../../db/orm';
import type { Config } from '../../lib/config';
import type { EventTriggers } from '../events/eventTriggers';
import type { MailTransport } from '../../mail/mailTransport';
import { emailRepository, type DeliveryOutcome, type EmailAttachment, type EmailRow } from '../../db/emails/emailRepository';
import { domainRepository, type DkimSigningKey, type DomainRow } from '../../db/domains/domainRepository';
import { contactRepository } from '../../db/contacts/contactRepository';
import { sendRecordedEmail } from '../../mail/delivery/emailSender';
import { recipientRefusal } from './recipientRefusal';
import { retryWhileDatabaseUnavailable } from '../../db/databaseAvailability';
import { outboxSenderRule } from '../domains/senderDomainLookup';

export interface DeliveryAttemptResult {
  sent: number;
  failed: number;
  suppressed: number;
  /** Emails that failed temporarily: to try again after a wait. */
  retry: string[];
}

export interface DeliveryServices {
  config: Config;
  orm: Orm;
  transport: MailTransport;
  eventTriggers: EventTriggers;
}

/** Emails handed to the transport at once; also how many a crash mid-attempt can send twice. */
export const SEND_WAVE = 10;
/** How long a claim keeps other deliveries off an email; the same owner reclaims at once. */
export const CLAIM_HOLD_SECONDS = 600;
/**
 * How long a wave the relay has accepted waits for the database to record it. A failed
 * attempt would send the wave again when retried, so the outcomes (held in memory) wait out a
 * database restart or failover instead; kept under the shortest timeout of the activities that
 * deliver (2 minutes), so an attempt is never retried while it still waits.
 */
const RECORD_OUTCOMES_PATIENCE_MS = 60_000;

/** This process's delivery attempts still running, by claim owner (see deliverRecordedEmails). */
const attemptsRunning = new Map<string, Promise<DeliveryAttemptResult>>();

interface DeliveryOptions {
  onWave?: (done: number) => void;
  waveSize?: number;
  /** Called while a sent wave waits for the database to record it (an activity's heartbeat). */
  onWait?: () => void;
  /**
   * For mail its caller recorded a moment ago, in the same activity: the recipient rule was
   * applied as it was recorded, and the sender domain was just looked up. Delivery takes those
   * answers rather than asking the database again.
   */
  justRecorded?: { senderDomain: { projectId: string; fromAddress: string; domain: DomainRow | null } };
}

/**
 * One delivery attempt over recorded emails, whoever recorded them (a transactional send, a
 * campaign batch, a workflow step), in waves: each wave claims the emails still to send under
 * `owner` (stable across retries of the same attempt), refuses the ones a suppression or an
 * unsubscribe now forbids, signs and sends the rest, and records the outcomes, with their
 * email.sent / email.failed events, before the next wave (a crash repeats at most the wave in flight).
 */
export async function deliverRecordedEmails(
  services: DeliveryServices,
  emailIds: string[],
  owner: string,
  options: DeliveryOptions = {},
): Promise<DeliveryAttemptResult> {
  // The same owner reclaims its emails at once, so an attempt run again after a crash resumes with
  // the wave in flight. But an attempt can also run again while its first run is alive: Temporal
  // gives up on a workflow task whose worker stalled past the task's timeout (a long GC pause, a
  // starved CPU) and the local activity is dispatched again in this same process while the first
  // run still waits on the relay. The later run waits for the earlier to end (it then finds their
  // emails recorded), so a stall hands nothing over twice (test/send/deliveryDurability.test.ts).
  const earlier = attemptsRunning.get(owner) ?? Promise.resolve();
  const run = earlier.then(
    () => deliverAttempt(services, emailIds, owner, options),
    () => deliverAttempt(services, emailIds, owner, options),
  );
  attemptsRunning.set(owner, run);
  try {
    return await run;
  } finally {
    if (attemptsRunning.get(owner) === run) attemptsRunning.delete(owner);
  }
}

async function deliverAttempt(services: DeliveryServices, emailIds: string[], owner: string, options: DeliveryOptions): Promise<DeliveryAttemptResult> {
  const { orm } = services;
  const waveSize = options.waveSize ?? SEND_WAVE;
  const result: DeliveryAttemptResult = { sent: 0, failed: 0, suppressed: 0, retry: [] };
  const signings = new Map<string, SenderSigning>();
  const known = options.justRecorded?.senderDomain;
  if (known) signings.set(signingKeyCacheKey(known.projectId, known.fromAddress), senderSigning(services, known.fromAddress, known.domain));
  const attachmentSets = new Map<string, EmailAttachment[]>();
  const listeners = services.config.smtpListeners;
  const returnPathSubdomain = listeners.inboundMxHost ? listeners.returnPathSubdomain : null;
  for (let i = 0; i < emailIds.length; i += waveSize) {
    const em = orm.em.fork();
    const wave = emailIds.slice(i, i + waveSize);
    const claimed = await emailRepository.claimForDelivery(em, wave, owner, CLAIM_HOLD_SECONDS);
    if (!claimed.length) continue;
    const refusals = options.justRecorded ? new Map<string, string>() : await refusedByRecipient(em, claimed);
    const outcomes = await Promise.all(
      claimed.map(async (email): Promise<DeliveryOutcome> => {
        const refusal = refusals.get(email.id);
        if (refusal) return { emailId: email.id, status: 'SUPPRESSED', error: refusal };
        const signing = await signingOf(services, email, signings);
        if ('refusal' in signing) return { emailId: email.id, status: 'FAILED', error: signing.refusal };
        const attachments = email.attachmentSetId ? await attachmentsOf(orm, email.attachmentSetId, attachmentSets) : [];
        return sendRecordedEmail(services.transport, email, { dkim: signing.dkim, attachments, returnPathSubdomain });
      }),
    );
    await recordAndAnnounce(services, outcomes, options.onWait);
    for (const outcome of outcomes) {
      if (outcome.status === 'SENT') result.sent++;
      else if (outcome.status === 'FAILED') result.failed++;
      else if (outcome.status === 'SUPPRESSED') result.suppressed++;
      else result.retry.push(outcome.emailId);
    }
    options.onWave?.(i + waveSize);
  }
  return result;
}

/**
 * Records a wave's outcomes and announces their events, each waiting out a database that is
 * away (RECORD_OUTCOMES_PATIENCE_MS): the mail has left, and only this record keeps a retried
 * attempt from sending it again.
 */
async function recordAndAnnounce(services: DeliveryServices, outcomes: DeliveryOutcome[], onWait?: () => void): Promise<void> {
  const patience = { patienceMs: RECORD_OUTCOMES_PATIENCE_MS, onWait };
  const events = await retryWhileDatabaseUnavailable(() => emailRepository.recordOutcomes(services.orm.em.fork(), outcomes), patience);
  for (const [projectId, list] of events) await retryWhileDatabaseUnavailable(() => services.eventTriggers.afterEventsRecorded(projectId, list), patience);
}

/**
 * Why each email may not be sent now, if it may not: its address was suppressed (a hard bounce
 * or a complaint) or, for MARKETING mail, its contact unsubscribed since it was accepted.
 */
async function refusedByRecipient(em: ReturnType<Orm['em']['fork']>, emails: EmailRow[]): Promise<Map<string, string>> {
  const refusals = new Map<string, string>();
  const byProject = new Map<string, EmailRow[]>();
  for (const email of emails) byProject.set(email.projectId, [...(byProject.get(email.projectId) ?? []), email]);
  for (const [projectId, list] of byProject) {
    const suppressed = await emailRepository.suppressedAddresses(em, projectId, [...new Set(list.map((e) => e.toAddress))]);
    const marketingContactIds = list.flatMap((e) => (e.type === 'MARKETING' && e.contactId ? [e.contactId] : []));
    const unsubscribed = marketingContactIds.length ? await contactRepository.unsubscribedAmong(em, marketingContactIds) : new Set<string>();
    for (const email of list) {
      const refusal = recipientRefusal(email, {
        suppressed: suppressed.has(email.toAddress),
        subscribed: !(email.contactId && unsubscribed.has(email.contactId)),
      });
      if (refusal) refusals.set(email.id, refusal);
    }
  }
  return refusals;
}

const signingKeyCacheKey = (projectId: string, fromAddress: string) => `${projectId} ${fromAddress.split('@')[1]}`;

/** How mail from a sender goes out: signed with this key (none for the outbox sender domain), or not at all, and why. */
export type SenderSigning = { dkim: DkimSigningKey | null } | { refusal: string };

/**
 * The outbox sender domain is decided by the transport in hand (outboxSenderRule): unsigned into
 * the outbox, refused by a relay. Any other sender needs its project's domain, whose key signs.
 */
export function senderSigning(services: DeliveryServices, fromAddress: string, domain: DomainRow | null): SenderSigning {
  const outbox = outboxSenderRule(fromAddress, services.transport.kind);
  if (outbox) return outbox.allowed ? { dkim: null } : { refusal: outbox.reason };
  if (!domain) return { refusal: `The sender domain of ${fromAddress} is no longer a domain of this project` };
  return { dkim: domainRepository.dkimSigningKey(services.config.secret, domain) };
}

async function signingOf(services: DeliveryServices, email: EmailRow, cache: Map<string, SenderSigning>): Promise<SenderSigning> {
  const key = signingKeyCacheKey(email.projectId, email.fromAddress);
  let signing = cache.get(key);
  if (!signing) {
    const domain = await domainRepository.findSigningDomain(services.orm.em.fork(), email.projectId, email.fromAddress);
    signing = senderSigning(services, email.fromAddress, domain);
    cache.set(key, signing);
  }
  return signing;
}

async function attachmentsOf(orm: Orm, setId: string, cache: Map<string, EmailAttachment[]>): Promise<EmailAttachment[]> {
  if (!cache.has(setId)) cache.set(setId, await emailRepository.attachments(orm.em.fork(), setId));
  return cache.get(setId)!;
}
