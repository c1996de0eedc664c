import type { Orm } from '../../db/orm';
import type { Config } from '../../lib/config';
import type { EventTriggers } from '../../db/events/eventTriggers';
import type { MailTransport } from '../../mail/mailTransport';
import { emailRepository, type DeliveryOutcome, type EmailAttachment, type EmailRow } from '../../db/emails/emailRepository';
import { domainRepository, type DkimSigningKey, type DomainRow } from '../../db/domains/domainRepository';
import { sendRecordedEmail } from '../../mail/delivery/emailSender';
import { recipientRefusal } from './recipientRefusal';

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
const CLAIM_HOLD_SECONDS = 600;

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
  options: {
    onWave?: (done: number) => void;
    waveSize?: number;
    shouldStop?: () => Promise<boolean>;
    /**
     * For mail its caller recorded a moment ago, in the same activity: the recipient rule was
     * applied as it was recorded, and the sender domain was just looked up. Delivery takes those
     * answers rather than asking the database again.
     */
    justRecorded?: { senderDomain: { projectId: string; fromAddress: string; domain: DomainRow | null } };
  } = {},
): Promise<DeliveryAttemptResult> {
  const { orm } = services;
  const waveSize = options.waveSize ?? SEND_WAVE;
  const result: DeliveryAttemptResult = { sent: 0, failed: 0, suppressed: 0, retry: [] };
  const dkimKeys = new Map<string, DkimSigningKey | null>();
  const known = options.justRecorded?.senderDomain;
  if (known)
    dkimKeys.set(
      signingKeyCacheKey(known.projectId, known.fromAddress),
      known.domain ? domainRepository.dkimSigningKey(services.config.secret, known.domain) : null,
    );
  const attachmentSets = new Map<string, EmailAttachment[]>();
  // Claimed wave by wave, so that stopping between waves (a cancelled campaign) leaves the rest
  // untouched rather than held.
  for (let i = 0; i < emailIds.length; i += waveSize) {
    if (options.shouldStop && (await options.shouldStop())) break;
    const em = orm.em.fork();
    const claimed = await emailRepository.claimForDelivery(em, emailIds.slice(i, i + waveSize), owner, CLAIM_HOLD_SECONDS);
    if (!claimed.length) continue;
    const refusals = options.justRecorded ? new Map<string, string>() : await refusedByRecipient(em, claimed);
    const outcomes = await Promise.all(
      claimed.map(async (email): Promise<DeliveryOutcome> => {
        const refusal = refusals.get(email.id);
        if (refusal) return { emailId: email.id, status: 'SUPPRESSED', error: refusal };
        const dkim = await signingKey(services, email, dkimKeys);
        if (dkim === undefined) {
          return { emailId: email.id, status: 'FAILED', error: `The sender domain of ${email.fromAddress} is no longer a domain of this project` };
        }
        const attachments = email.attachmentSetId ? await attachmentsOf(orm, email.attachmentSetId, attachmentSets) : [];
        return sendRecordedEmail(services.transport, email, { dkim, attachments });
      }),
    );
    await recordAndAnnounce(services, outcomes);
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

async function recordAndAnnounce(services: DeliveryServices, outcomes: DeliveryOutcome[]): Promise<void> {
  const events = await emailRepository.recordOutcomes(services.orm.em.fork(), outcomes);
  for (const [projectId, list] of events) await services.eventTriggers.afterEventsRecorded(projectId, list);
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
    const marketing = list.filter((e) => e.type === 'MARKETING' && e.contactId);
    const unsubscribed = new Set<string>();
    if (marketing.length) {
      const rows = await em.execute(`select id from contacts where id = any(?::uuid[]) and not subscribed`, [
        `{${marketing.map((e) => e.contactId).join(',')}}`,
      ]);
      for (const r of rows as Array<{ id: string }>) unsubscribed.add(r.id);
    }
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

/** The DKIM key for the email's sender domain; undefined when the project no longer has that domain. */
async function signingKey(services: DeliveryServices, email: EmailRow, cache: Map<string, DkimSigningKey | null>): Promise<DkimSigningKey | undefined> {
  const key = signingKeyCacheKey(email.projectId, email.fromAddress);
  if (!cache.has(key)) {
    const domain = await domainRepository.findSigningDomain(services.orm.em.fork(), email.projectId, email.fromAddress);
    cache.set(key, domain ? domainRepository.dkimSigningKey(services.config.secret, domain) : null);
  }
  return cache.get(key) ?? undefined;
}

async function attachmentsOf(orm: Orm, setId: string, cache: Map<string, EmailAttachment[]>): Promise<EmailAttachment[]> {
  if (!cache.has(setId)) cache.set(setId, await emailRepository.attachments(orm.em.fork(), setId));
  return cache.get(setId)!;
}
