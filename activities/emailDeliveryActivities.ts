import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { emailRepository, type DeliveryOutcome, type EmailAttachment, type EmailRow } from '../db/emails/emailRepository';
import { domainRepository, type DkimSigningKey } from '../db/domains/domainRepository';
import { sendRecordedEmail } from '../mail/delivery/emailSender';

export interface DeliveryAttemptResult {
  sent: number;
  failed: number;
  suppressed: number;
  /** Emails that failed temporarily: the workflow tries them again after its next wait. */
  retry: string[];
}

/** Emails handed to the transport at once; also how many a crash mid-attempt can send twice. */
const SEND_WAVE = 10;
/** How long a claim keeps other deliveries off an email; the same activity's retries reclaim at once. */
const CLAIM_HOLD_SECONDS = 600;

export function createEmailDeliveryActivities({ config, orm, mail, logger, eventTriggers }: ActivityDeps) {
  async function recordAndAnnounce(outcomes: DeliveryOutcome[]): Promise<void> {
    const events = await emailRepository.recordOutcomes(orm.em.fork(), outcomes);
    for (const [projectId, list] of events) await eventTriggers.afterEventsRecorded(projectId, list);
  }

  return {
    /**
     * One delivery attempt over recorded emails: claims those still to send, refuses the ones a
     * suppression or an unsubscribe now forbids, signs and sends the rest in waves, and records
     * each wave's outcome before the next (a crash repeats at most the wave in flight).
     */
    async deliverEmails(input: { emailIds: string[] }): Promise<DeliveryAttemptResult> {
      const context = Context.current();
      const workflowId = context.info.workflowExecution?.workflowId ?? 'standalone';
      const owner = `${workflowId}/${context.info.activityId}`;
      const em = orm.em.fork();
      const claimed = await emailRepository.claimForDelivery(em, input.emailIds, owner, CLAIM_HOLD_SECONDS);
      const result: DeliveryAttemptResult = { sent: 0, failed: 0, suppressed: 0, retry: [] };
      if (!claimed.length) return result;

      const refusals = await refusedByRecipient(em, claimed);
      const dkimKeys = new Map<string, DkimSigningKey | null>();
      const attachmentSets = new Map<string, EmailAttachment[]>();
      const outcomes: DeliveryOutcome[] = [];
      const sendable: EmailRow[] = [];
      for (const email of claimed) {
        const refusal = refusals.get(email.id);
        if (refusal) outcomes.push({ emailId: email.id, status: 'SUPPRESSED', error: refusal });
        else sendable.push(email);
      }
      if (outcomes.length) await recordAndAnnounce(outcomes.splice(0));

      for (let i = 0; i < sendable.length; i += SEND_WAVE) {
        const wave = sendable.slice(i, i + SEND_WAVE);
        const waveOutcomes = await Promise.all(
          wave.map(async (email) => {
            const dkim = await signingKey(email, dkimKeys);
            if (dkim === undefined) {
              return { emailId: email.id, status: 'FAILED' as const, error: `The sender domain of ${email.fromAddress} is no longer a domain of this project` };
            }
            const attachments = email.attachmentSetId ? await attachmentsOf(email.attachmentSetId, attachmentSets) : [];
            return sendRecordedEmail(mail, email, { dkim, attachments });
          }),
        );
        await recordAndAnnounce(waveOutcomes);
        for (const outcome of waveOutcomes) {
          if (outcome.status === 'SENT') result.sent++;
          else if (outcome.status === 'FAILED') result.failed++;
          else if (outcome.status === 'RETRY') result.retry.push(outcome.emailId);
        }
        context.heartbeat({ done: i + wave.length });
      }
      result.suppressed = claimed.length - sendable.length;
      if (result.retry.length) logger.warn({ emails: result.retry.length, workflowId }, 'temporary delivery failures; retrying later');
      return result;
    },

    /** Gives up on emails whose retries are spent: FAILED with their last error, and `email.failed`. */
    async failUndeliveredEmails(input: { emailIds: string[]; reason: string }): Promise<void> {
      const events = await emailRepository.failQueued(orm.em.fork(), input.emailIds, input.reason);
      for (const [projectId, list] of events) await eventTriggers.afterEventsRecorded(projectId, list);
    },

    /** Accepted emails no delivery has touched, grouped by the workflow that should own them (see emailDeliverySweepWorkflow). */
    async findUndeliveredEmails(input: { olderThanSeconds: number; limit: number }) {
      const groups = await emailRepository.findUnattempted(orm.em.fork(), input.olderThanSeconds, input.limit);
      if (groups.length) logger.warn({ workflows: groups.length, emails: groups.reduce((n, g) => n + g.emailIds.length, 0) }, 'found accepted mail whose delivery never started; starting it');
      return { groups, retryDelaysSeconds: config.deliveryRetryDelaysSeconds };
    },
  };

  /**
   * Why each email may not be sent now, if it may not: its address was suppressed (a hard bounce
   * or a complaint) or, for MARKETING mail, its contact unsubscribed since it was accepted.
   */
  async function refusedByRecipient(em: ReturnType<typeof orm.em.fork>, emails: EmailRow[]): Promise<Map<string, string>> {
    const refusals = new Map<string, string>();
    const byProject = new Map<string, EmailRow[]>();
    for (const email of emails) byProject.set(email.projectId, [...(byProject.get(email.projectId) ?? []), email]);
    for (const [projectId, list] of byProject) {
      const suppressed = await emailRepository.suppressedAddresses(em, projectId, [...new Set(list.map((e) => e.toAddress))]);
      const marketing = list.filter((e) => e.type === 'MARKETING' && e.contactId);
      const unsubscribed = new Set<string>();
      if (marketing.length) {
        const rows = await em.execute(`select id from contacts where id = any(?::uuid[]) and not subscribed`, [`{${marketing.map((e) => e.contactId).join(',')}}`]);
        for (const r of rows as any[]) unsubscribed.add(r.id);
      }
      for (const email of list) {
        if (suppressed.has(email.toAddress)) refusals.set(email.id, 'The address is suppressed after a hard bounce or a complaint');
        else if (email.type === 'MARKETING' && unsubscribed.has(email.contactId)) refusals.set(email.id, 'The contact is unsubscribed');
      }
    }
    return refusals;
  }

  /** The DKIM key for the email's sender domain; undefined when the project no longer has that domain. */
  async function signingKey(email: EmailRow, cache: Map<string, DkimSigningKey | null>): Promise<DkimSigningKey | null | undefined> {
    const key = `${email.projectId} ${email.fromAddress.split('@')[1]}`;
    if (!cache.has(key)) {
      const domain = await domainRepository.findSigningDomain(orm.em.fork(), email.projectId, email.fromAddress);
      cache.set(key, domain ? domainRepository.dkimSigningKey(config.secret, domain) : null);
    }
    const found = cache.get(key);
    return found === null ? undefined : found;
  }

  async function attachmentsOf(setId: string, cache: Map<string, EmailAttachment[]>): Promise<EmailAttachment[]> {
    if (!cache.has(setId)) cache.set(setId, await emailRepository.attachments(orm.em.fork(), setId));
    return cache.get(setId)!;
  }
}
export type EmailDeliveryActivities = ReturnType<typeof createEmailDeliveryActivities>;
