import type { Logger } from '../../lib/logger';
import { campaignSendRepository } from '../../db/campaigns/campaignSendRepository';
import { campaignWaveRepository, type HandOverOutcome } from '../../db/campaigns/campaignWaveRepository';
import { domainRepository } from '../../db/domains/domainRepository';
import type { UsageCategory } from '../billing/usageCaps';
import { senderSigning, type DeliveryServices } from '../sending/recordedEmailDelivery';
import { composeEmail } from '../sending/emailComposer';
import { campaignWorkflowId } from '../../temporal/deliveryWorkflowStart';
import { campaignStatus } from './campaignStatus';
import { CAMPAIGN_WAVE, campaignBatchKey } from './campaignBatchClaims';
import { buildWave, handOver, rebuildWave, recordRound } from './campaignWaves';
import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';

export interface CampaignBatchResult {
  /** The campaign is no longer SENDING (cancelled, deleted, stopped because its project was disabled): stop. */
  stopped: boolean;
  /** The last recipient this batch covered (the workflow plans batches with planCampaignBatches). */
  nextCursor: string | null;
  recipients: number;
  sent: number;
  failed: number;
  suppressed: number;
  /** Emails that failed temporarily, handed to a delivery workflow with its retries. */
  retry: string[];
  /** Set when the project's monthly campaigns cap cut this batch short: the send stops after it. */
  capReached?: { category: UsageCategory; limit: number | null };
}

/**
 * Fault injection for test/campaigns/campaignWaveKill.test.ts only, which sets it in the worker
 * process it starts: that process kills itself right after recording this many waves, before
 * handing the last one over (the moment a claim per batch must survive). Unset everywhere else.
 */
const KILL_AFTER_RECORDED_WAVES = Number(process.env.MAILROOM_TEST_KILL_AFTER_RECORDED_WAVES ?? 0);
let recordedWaves = 0;

export interface CampaignBatchDeps {
  /** Delivery through the campaign's own transport. */
  services: DeliveryServices;
  logger: Logger;
}

/** How the batch reports progress to whoever runs it and learns that it is cancelled (a Temporal activity's heartbeats). */
export interface CampaignBatchControl {
  heartbeat(details: Record<string, unknown>): void;
  cancelled(): boolean;
  /**
   * The delivery attempt running the batch (an activity attempt: unique per retry), which owns the
   * batch's claim; `retried` when an earlier attempt of the same batch may have recorded some of it.
   */
  attempt: { id: string; retried: boolean };
}

/**
 * One batch of the audience, from `afterContactId` on, under one claim (campaign_batch_claims)
 * owned by this attempt, in waves of CAMPAIGN_WAVE (services/campaigns/campaignWaves.ts): each
 * wave is composed and its messages built and signed, then recorded in one statement in its
 * final state (SENT, or SUPPRESSED by the recipient rule, within the monthly campaigns cap, only
 * while the campaign is SENDING and its project enabled, only while the claim is this
 * attempt's), with the previous wave's events; then the emails it recorded are handed over. A
 * retried attempt takes the claim over, hands over again the one wave the superseded attempt
 * recorded without it being known to have left, and goes on with the contacts that have no email
 * yet (the unique (campaign, contact) key makes a second copy impossible anyway). A campaign no
 * longer SENDING stops the batch after the wave in hand; a disabled project makes the batch end
 * the send itself (CANCELLED with the reason), so every running batch sees it is no longer SENDING.
 */
export async function sendCampaignBatch(
  deps: CampaignBatchDeps,
  input: { campaignId: string; afterContactId: string | null; limit: number },
  control: CampaignBatchControl,
): Promise<CampaignBatchResult> {
  const { services, logger } = deps;
  const { config, orm } = services;
  const em = orm.em.fork();
  const none = { recipients: 0, sent: 0, failed: 0, suppressed: 0, retry: [] };
  const campaign = await campaignSendRepository.find(em, input.campaignId);
  if (!campaign || campaign.status !== 'SENDING') return { stopped: true, nextCursor: null, ...none };
  if (campaign.projectDisabled) {
    await stopForDisabledProject(deps, campaign.id, campaign.projectId, campaign.projectDisabledReason);
    return { stopped: true, nextCursor: null, ...none };
  }

  const page = await campaignSendRepository.recipientsPage(em, campaign.id, input.afterContactId, input.limit);
  const nextCursor = page.lastContactId;
  if (!page.contacts.length) return { stopped: false, nextCursor, ...none };

  const domain = await domainRepository.findSigningDomain(em, campaign.projectId, campaign.fromAddress);
  const senderDomain = domain?.domain ?? campaign.fromAddress.split('@')[1];
  const signing = senderSigning(services, campaign.fromAddress, domain);
  const batch = { campaignId: campaign.id, projectId: campaign.projectId, batchStart: campaignBatchKey(input.afterContactId), attempt: control.attempt.id };
  const onWait = () => control.heartbeat({ waitingForDatabase: true });
  const result = { sent: 0, failed: 0, suppressed: 0, retry: [] as string[] };
  const tally = (outcomes: HandOverOutcome[]) => {
    for (const outcome of outcomes) {
      if (outcome.status === 'SENT') result.sent++;
      else if (outcome.status === 'FAILED') result.failed++;
      else result.retry.push(outcome.emailId);
    }
  };

  const taken = await campaignWaveRepository.takeBatch(em, batch.campaignId, batch.batchStart, batch.attempt);
  // What the previous wave's hand-over did: recorded by the next round, or the last one.
  let handedOver: HandOverOutcome[] = [];
  if (taken.pendingWave.length) {
    const rows = await campaignWaveRepository.pendingWaveRows(em, taken.pendingWave);
    const { built, alreadySent } = rebuildWave(services, rows, signing);
    handedOver = [...alreadySent, ...(await handOver(services, built))];
    tally(handedOver);
  }
  const alreadyRecorded =
    taken.retried || control.attempt.retried
      ? await campaignWaveRepository.contactsWithEmail(
          em,
          campaign.id,
          page.contacts.map((c) => c.id),
        )
      : new Set<string>();
  const contacts = page.contacts.filter((c) => !alreadyRecorded.has(c.id));

  let stopped = false;
  let superseded = false;
  let disabled: { disabledReason: string | null } | undefined;
  let cap: { limit: number | null } | undefined;
  let covered = alreadyRecorded.size;
  for (let i = 0; i < contacts.length; i += CAMPAIGN_WAVE) {
    // A cancel reaches a running batch through its heartbeats, or the campaign's status below.
    if (control.cancelled()) break;
    const emails = contacts.slice(i, i + CAMPAIGN_WAVE).map(
      (contact) =>
        composeEmail(config, {
          id: newTimeOrderedId(),
          projectId: campaign.projectId,
          source: 'CAMPAIGN',
          content: { subject: campaign.subject, body: campaign.body, type: campaign.type },
          sender: { fromAddress: campaign.fromAddress, fromName: campaign.fromName, replyTo: campaign.replyTo, domain: senderDomain },
          // The recording statement applies the recipient rule as it records the wave, from the
          // suppression list and the contact as they are then.
          recipient: { toAddress: contact.email, toName: null, contactId: contact.id, suppressed: false, subscribed: true },
          personalisation: { contact, requestData: {}, linkContactId: contact.id },
          owners: { templateId: null, campaignId: campaign.id },
          // The campaign's own workflow delivers them (the delivery sweep leaves campaign mail alone).
          deliveryWorkflowId: campaignWorkflowId(campaign.id),
        }).email,
    );
    const { wave, built } = await buildWave(services, emails, signing);
    const round = await recordRound(services, { ...batch, handedOver, wave, release: false }, onWait);
    if (!round.claimed) {
      // A newer attempt owns the batch (this one was taken for dead): it records what this one handed over.
      superseded = true;
      break;
    }
    handedOver = [];
    if (round.state.state !== 'SENDING') {
      if (round.state.state === 'PROJECT_DISABLED') disabled = round.state;
      stopped = true;
      break;
    }
    covered += emails.length - round.beyondCap;
    for (const email of round.recorded) {
      if (email.status === 'SUPPRESSED') result.suppressed++;
      else if (email.status === 'FAILED') result.failed++;
    }
    control.heartbeat({ recorded: covered });
    if (KILL_AFTER_RECORDED_WAVES && ++recordedWaves === KILL_AFTER_RECORDED_WAVES) process.kill(process.pid, 'SIGKILL');
    // Only what the statement recorded leaves; once recorded, it always leaves.
    handedOver = await handOver(
      services,
      round.recorded.flatMap((email) => (email.status === 'SENT' && built.has(email.id) ? [built.get(email.id)!] : [])),
    );
    tally(handedOver);
    if (round.beyondCap > 0) {
      cap = { limit: round.capLimit };
      break;
    }
  }
  if (!superseded) await recordRound(services, { ...batch, handedOver, wave: [], release: true }, onWait);
  await campaignSendRepository.refreshSentCount(em, campaign.id);
  const recipients = stopped || cap ? covered : page.contacts.length;
  if (disabled) {
    await stopForDisabledProject(deps, campaign.id, campaign.projectId, disabled.disabledReason);
    return { stopped: true, nextCursor, recipients, ...result };
  }
  if (result.retry.length)
    logger.warn({ campaignId: campaign.id, emails: result.retry.length }, 'campaign: temporary delivery failures; handing them to a delivery workflow');
  if (cap) {
    logger.info({ campaignId: campaign.id, projectId: campaign.projectId, limit: cap.limit }, 'campaign: the monthly campaigns cap is reached; the send stops');
    return { stopped: false, nextCursor, recipients, ...result, capReached: { category: 'campaigns', limit: cap.limit } };
  }
  return { stopped, nextCursor, recipients, ...result };
}

async function stopForDisabledProject(deps: CampaignBatchDeps, campaignId: string, projectId: string, disabledReason: string | null): Promise<void> {
  await campaignStatus.stopForDisabledProject(deps.services.orm.em.fork(), campaignId, disabledReason);
  deps.logger.warn({ campaignId, projectId, disabledReason }, 'campaign: the project is disabled; the send stops');
}
