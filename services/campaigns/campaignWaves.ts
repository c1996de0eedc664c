import type { EmailRow, NewEmail } from '../../db/emails/emailRepository';
import { inStoredOrder } from '../../db/emails/emailRepository';
import { domainRepository } from '../../db/domains/domainRepository';
import { campaignSendRepository } from '../../db/campaigns/campaignSendRepository';
import { campaignWaveRepository, type HandOverOutcome, type WaveEmail, type WaveRound, type WaveRoundResult } from '../../db/campaigns/campaignWaveRepository';
import { retryWhileDatabaseUnavailable } from '../../db/databaseAvailability';
import { recordedEmailDelivery, sendBuiltEmail } from '../../mail/delivery/emailSender';
import { buildMessage, type BuiltMessage } from '../../mail/mime/messageBuilder';
import type { OutgoingMail } from '../../mail/mailTransport';
import { senderSigning, type DeliveryServices, type SenderSigning } from '../sending/recordedEmailDelivery';
import { recipientRefusal } from '../sending/recipientRefusal';

/**
 * A campaign batch's waves, recorded once (docs/decisions.md, "Campaigns: record once"). Each
 * wave's messages are built and signed first, so what reproduces them (the stamp) exists before
 * their rows; one statement (campaignWaveRepository.recordRound) then records the wave in its
 * final state, SENT as after a successful hand-over, under the batch's claim, together with the
 * previous wave's events; only the emails it recorded are handed over, and a recorded wave is
 * always handed over. What the hand-over did is recorded by the next round: events, and the rare
 * correction of a row the relay refused (FAILED) or could not take yet (QUEUED again, retried by
 * a delivery workflow).
 */

/** How long a wave the relay accepted waits for the database to record what happened (see recordedEmailDelivery). */
const RECORD_PATIENCE_MS = 60_000;
/**
 * A claim no round has written for this long belongs to an attempt that is gone (a batch's
 * heartbeat timeout is 30 s): the end of the send hands its pending wave over itself.
 */
export const ABANDONED_CLAIM_SECONDS = 30;

/** The recipient rule's reasons, written on the rows it refuses (the rule itself: recipientRefusal). */
const REFUSALS = {
  suppressed: recipientRefusal({ type: 'MARKETING' }, { suppressed: true, subscribed: true })!,
  unsubscribed: recipientRefusal({ type: 'MARKETING' }, { suppressed: false, subscribed: false })!,
};

/** A wave's message ready to hand over: the mail (envelope included) and its bytes. */
export interface BuiltEmail {
  emailId: string;
  mail: OutgoingMail;
  message: BuiltMessage;
}

/**
 * Builds and signs each email's message as the row will read back (headers in stored order), so
 * GET /emails/:id/raw rebuilds these bytes from the row and its stamp. A message that cannot be
 * built, or a sender that may not send, makes the email FAILED with the reason.
 */
export async function buildWave(
  services: DeliveryServices,
  emails: NewEmail[],
  signing: SenderSigning,
): Promise<{ wave: WaveEmail[]; built: Map<string, BuiltEmail> }> {
  const built = new Map<string, BuiltEmail>();
  const returnPathSubdomain = returnPathOf(services);
  const wave = await Promise.all(
    emails.map(async (email): Promise<WaveEmail> => {
      if ('refusal' in signing) return { email, stamp: null, failure: signing.refusal };
      const mail = recordedEmailDelivery(asRecordedRow(email), { dkim: signing.dkim, attachments: [], returnPathSubdomain });
      try {
        const message = await services.transport.build(mail);
        built.set(email.id, { emailId: email.id, mail, message });
        return { email, stamp: message.stamp, failure: null };
      } catch (err) {
        return { email, stamp: null, failure: (err as Error).message.slice(0, 1000) };
      }
    }),
  );
  return { wave, built };
}

/**
 * The rows of a recorded wave whose hand-over is not known, as messages again: the same bytes
 * (date, boundaries and DKIM-Signature from the stamp), so a copy that did leave is the same
 * message. Rows feedback moved past SENT were handed over: they are answered as sent, not rebuilt.
 */
export function rebuildWave(services: DeliveryServices, rows: EmailRow[], signing: SenderSigning): { built: BuiltEmail[]; alreadySent: HandOverOutcome[] } {
  const built: BuiltEmail[] = [];
  const alreadySent: HandOverOutcome[] = [];
  const dkim = 'dkim' in signing ? signing.dkim : null;
  for (const row of rows) {
    if (row.status !== 'SENT') {
      if (row.sentAt) alreadySent.push({ emailId: row.id, status: 'SENT', providerMessageId: null });
      continue;
    }
    const mail = recordedEmailDelivery(row, { dkim, attachments: [], returnPathSubdomain: returnPathOf(services) });
    built.push({ emailId: row.id, mail, message: buildMessage(mail, { stamp: row.messageStamp ?? undefined }) });
  }
  return { built, alreadySent };
}

/** Hands a recorded wave over, all at once; what happened is recorded by the next round. */
export async function handOver(services: DeliveryServices, wave: BuiltEmail[]): Promise<HandOverOutcome[]> {
  return Promise.all(
    wave.map(async ({ emailId, mail, message }): Promise<HandOverOutcome> => {
      const outcome = await sendBuiltEmail(services.transport, emailId, mail, message);
      if (outcome.status === 'SENT') return { emailId, status: 'SENT', providerMessageId: outcome.providerMessageId };
      if (outcome.status === 'FAILED') return { emailId, status: 'FAILED', error: outcome.error, stamp: outcome.stamp ?? null };
      return { emailId, status: 'RETRY', error: outcome.status === 'RETRY' ? outcome.error : 'delivery failed' };
    }),
  );
}

/**
 * One round (campaignWaveRepository.recordRound), then its events announced. A round whose
 * previous wave has left waits out a database that is away: only this record keeps a retried
 * attempt from sending that wave again. A contact deleted while the statement ran (its foreign
 * key refused) is seen gone by the next try. A month's first count creates its counter row, then repeats.
 */
export async function recordRound(services: DeliveryServices, round: Omit<WaveRound, 'refusals'>, onWait?: () => void): Promise<WaveRoundResult> {
  const run = (input: Omit<WaveRound, 'refusals'>) =>
    retryWhileDatabaseUnavailable(
      () => withContactsSettled(() => campaignWaveRepository.recordRound(services.orm.em.fork(), { ...input, refusals: REFUSALS })),
      {
        patienceMs: RECORD_PATIENCE_MS,
        onWait,
      },
    );
  let result = await run(round);
  if (result.claimed && !result.counted && round.wave.length && result.state.state === 'SENDING') {
    await campaignWaveRepository.ensureCounter(services.orm.em.fork(), round.projectId);
    // The hand-over and the refused or failed emails were recorded already; the rest of the wave now.
    const again = await run({ ...round, handedOver: [] });
    // The second run also answers the rows the first one wrote (the refused and failed ones): once each.
    const recorded = new Map([...result.recorded, ...again.recorded].map((email) => [email.id, email]));
    result = { ...again, recorded: [...recorded.values()], events: mergeEvents(result.events, again.events) };
  }
  for (const [projectId, events] of result.events) await services.eventTriggers.afterEventsRecorded(projectId, events);
  return result;
}

/**
 * Ends the waves of a campaign's batches whose attempts are gone (a worker killed between a
 * wave's record and its hand-over, and its send ended before a retry): each such wave is handed
 * over (rebuilt from its rows, their contacts still there) and recorded, so no row says SENT for
 * mail never sent. Claims still written by a running batch are waited for (it hands its own wave
 * over as it stops) up to `waitMs`; one silent for ABANDONED_CLAIM_SECONDS is taken.
 */
export async function handOverAbandonedWaves(
  services: DeliveryServices,
  campaignId: string,
  attempt: string,
  options: { waitMs: number; heartbeat?: () => void },
): Promise<number> {
  const giveUpAt = Date.now() + options.waitMs;
  const campaign = await campaignSendRepository.find(services.orm.em.fork(), campaignId);
  if (!campaign) return 0;
  const domain = await domainRepository.findSigningDomain(services.orm.em.fork(), campaign.projectId, campaign.fromAddress);
  const signing = senderSigning(services, campaign.fromAddress, domain);
  let handed = 0;
  for (;;) {
    const { taken, running } = await campaignWaveRepository.takeStaleBatches(services.orm.em.fork(), campaign.id, attempt, ABANDONED_CLAIM_SECONDS);
    for (const batch of taken) {
      const rows = await campaignWaveRepository.pendingWaveRows(services.orm.em.fork(), batch.pendingWave);
      const { built, alreadySent } = rebuildWave(services, rows, signing);
      const outcomes = [...alreadySent, ...(await handOver(services, built))];
      handed += built.length;
      await recordRound(services, {
        campaignId: campaign.id,
        projectId: campaign.projectId,
        batchStart: batch.batchStart,
        attempt,
        handedOver: outcomes,
        wave: [],
        release: true,
      });
    }
    if (!running || Date.now() > giveUpAt) return handed;
    options.heartbeat?.();
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/**
 * Retries a statement a concurrent contact delete refused (SQLSTATE 23503): its next snapshot no
 * longer sees the contact. Other errors go on, their message shortened.
 */
async function withContactsSettled<T>(fn: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await fn();
    } catch (err) {
      const { code, message } = err as { code?: string; message?: string };
      if (code === '23503' && tries < 5) continue;
      // The driver's message repeats the statement with its parameters (the wave's HTML): its end
      // says what went wrong, and an activity's failure must stay small.
      if (typeof message === 'string' && message.length > 2000) throw Object.assign(new Error(`… ${message.slice(-2000)}`), { code });
      throw err;
    }
  }
}

function mergeEvents<T>(a: Map<string, T[]>, b: Map<string, T[]>): Map<string, T[]> {
  const merged = new Map(a);
  for (const [key, list] of b) merged.set(key, [...(merged.get(key) ?? []), ...list]);
  return merged;
}

function returnPathOf(services: DeliveryServices): string | null {
  const listeners = services.config.smtpListeners;
  return listeners.inboundMxHost ? listeners.returnPathSubdomain : null;
}

/**
 * A composed email as its row will read back once recorded (what recordedEmailMail reads), so the
 * message built now is the one the row rebuilds. Every field written out: the shorter
 * `{ ...email, status: 'SENT', … }` made V8 build each row as a slow dictionary object, 24 µs and
 * ~12 KB of garbage an email against 0.35 µs (`git show b2a36a7^:README.md`, "session 6").
 */
function asRecordedRow(email: NewEmail): EmailRow {
  return {
    id: email.id,
    projectId: email.projectId,
    contactId: email.contactId,
    templateId: email.templateId,
    campaignId: email.campaignId,
    workflowExecutionId: email.workflowExecutionId,
    source: email.source,
    type: email.type,
    subject: email.subject,
    fromAddress: email.fromAddress,
    fromName: email.fromName,
    replyTo: email.replyTo,
    toAddress: email.toAddress,
    toName: email.toName,
    html: email.html,
    text: email.text,
    headers: inStoredOrder(email.headers),
    attachmentSetId: email.attachmentSetId,
    status: 'SENT',
    error: null,
    messageId: email.messageId,
    deliveryWorkflowId: email.deliveryWorkflowId,
    providerMessageId: null,
    attempts: 1,
    sentAt: null,
    deliveredAt: null,
    openedAt: null,
    clickedAt: null,
    bouncedAt: null,
    complainedAt: null,
    opens: 0,
    clicks: 0,
    createdAt: new Date(),
  };
}
