import {
  CancellationScope,
  ParentClosePolicy,
  continueAsNew,
  defineQuery,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { CampaignActivities, CampaignBatchResult } from '../activities/campaignActivities';
import { emailDeliveryWorkflow } from './emailDeliveryWorkflow';
import { MAX_EMAILS_PER_DELIVERY, deliveryChunks, deliveryWorkflowIds, deliveryWorkflowStart } from '../temporal/deliveryWorkflowStart';

const { loadCampaignForSend, beginCampaignSend, fixCampaignAudience, finishCampaignSend, cancelCampaignSend, planCampaignBatches, stopCampaignAtCap } =
  proxyActivities<CampaignActivities>({
    startToCloseTimeout: '5 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });

const { sendCampaignBatch } = proxyActivities<CampaignActivities>({
  // Each wave of a batch heartbeats: a killed worker is noticed within the heartbeat timeout and
  // the batch is repeated elsewhere, finding the emails it already recorded and sent.
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Recipients per batch: one activity renders, records and delivers them. */
const BATCH_SIZE = 500;
/**
 * Batches in flight at once. One batch spends much of its time waiting (the database, the SMTP
 * relay's answers), so a few side by side keep the worker busy; more would only queue.
 */
const PARALLEL_BATCHES = 4;
/**
 * Well below Temporal's history limits, the send carries on in a fresh run with its cursor. The
 * input's `maxHistoryEvents` sets another threshold (the fast tests cross runs with a few dozen).
 */
const MAX_HISTORY_EVENTS = 4000;

export interface CampaignProgress {
  /** STOPPED_AT_CAP: the project's monthly campaigns cap was reached (the campaign's stopReason says so). */
  phase: 'WAITING' | 'SENDING' | 'SENT' | 'CANCELLED' | 'NOT_SENDABLE' | 'STOPPED_AT_CAP';
  totalRecipients: number;
  /** The last contact id handed to a batch (the audience is walked in contact id order). */
  cursor: string | null;
  recipients: number;
  sent: number;
  failed: number;
  suppressed: number;
  batches: number;
  /** Emails of this campaign whose temporary failures went to delivery workflows for retries. */
  retried: number;
}

export interface CampaignSendInput {
  campaignId: string;
  projectId: string;
  /**
   * History events after which the send carries on in a fresh run (default MAX_HISTORY_EVENTS).
   * Else the threshold loadCampaignForSend answers (CAMPAIGN_HISTORY_EVENTS: the durability test's
   * worker process, started through the API, crosses runs with it).
   */
  maxHistoryEvents?: number;
  /** Set when a run continues as new: where the previous run stopped. */
  resume?: { progress: CampaignProgress; ratePerSecond: number | null; retryDelaysSeconds: number[]; maxHistoryEvents?: number };
}

export const getProgress = defineQuery<CampaignProgress>('getProgress');

/**
 * `campaign-<id>`: a campaign's send, from its schedule to its last recipient (contract 11).
 * Waits for `scheduledFor` on a durable timer, fixes the audience, then walks it by keyset in
 * batches; each batch renders, records (one email per campaign and contact, under a unique key)
 * and delivers inside an activity, so no recipient list ever travels through workflow history.
 * A project's rate cap paces the batches. Cancelling the workflow (the API's cancel, or an
 * operator in the Temporal UI) ends it with the campaign CANCELLED; mail already handed over stays sent.
 */
export async function campaignSendWorkflow(input: CampaignSendInput): Promise<CampaignProgress> {
  const progress: CampaignProgress = input.resume?.progress ?? {
    phase: 'WAITING',
    totalRecipients: 0,
    cursor: null,
    recipients: 0,
    sent: 0,
    failed: 0,
    suppressed: 0,
    batches: 0,
    retried: 0,
  };
  setHandler(getProgress, () => progress);
  let ratePerSecond = input.resume?.ratePerSecond ?? null;
  let retryDelaysSeconds = input.resume?.retryDelaysSeconds ?? [];
  let maxHistoryEvents = input.resume?.maxHistoryEvents ?? input.maxHistoryEvents ?? MAX_HISTORY_EVENTS;

  try {
    if (!input.resume) {
      const campaign = await loadCampaignForSend({ campaignId: input.campaignId });
      if (!campaign || (campaign.status !== 'SCHEDULED' && campaign.status !== 'SENDING')) {
        progress.phase = 'NOT_SENDABLE';
        return progress;
      }
      ratePerSecond = campaign.ratePerSecond;
      retryDelaysSeconds = campaign.retryDelaysSeconds;
      maxHistoryEvents = input.maxHistoryEvents ?? campaign.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
      const wait = campaign.scheduledFor ? Date.parse(campaign.scheduledFor) - Date.now() : 0;
      if (wait > 0) await sleep(wait);
      if (!(await beginCampaignSend({ campaignId: input.campaignId }))) {
        progress.phase = 'CANCELLED';
        return progress;
      }
      progress.phase = 'SENDING';
      progress.totalRecipients = await fixCampaignAudience({ campaignId: input.campaignId });
    }

    // A sliding window of batches: a new one starts as soon as any finishes, so one slow batch
    // does not hold the others up. Batch starts are planned a window ahead; `progress.cursor` is
    // the first start not yet launched, so every recipient before it is in a finished or running batch.
    // A capped project gets one batch at a time, each at most one second's worth, so the relay never
    // sees more than the cap in any second, give or take one batch.
    const batchSize = ratePerSecond ? Math.max(25, Math.min(BATCH_SIZE, ratePerSecond)) : BATCH_SIZE;
    const parallelBatches = ratePerSecond ? 1 : PARALLEL_BATCHES;
    const planned: Array<string | null> = [];
    let planFrom: string | null = progress.cursor;
    let planEnded = false;
    let stopped = false;
    let capReached: CampaignBatchResult['capReached'];
    let nextSlot = 0;
    const running = new Map<number, Promise<{ slot: number; batch: CampaignBatchResult }>>();
    const windowStartedAt = Date.now();
    let recipientsInWindow = 0;

    const launch = async (): Promise<boolean> => {
      if (!planned.length && !planEnded) {
        const plan = await planCampaignBatches({ campaignId: input.campaignId, afterContactId: planFrom, batchSize, count: parallelBatches * 2 });
        planned.push(...plan.starts);
        planFrom = plan.next;
        planEnded = plan.next === null;
      }
      const afterContactId = planned.shift();
      if (afterContactId === undefined) return false;
      progress.cursor = planned[0] ?? planFrom;
      const slot = nextSlot++;
      running.set(
        slot,
        sendCampaignBatch({ campaignId: input.campaignId, afterContactId, limit: batchSize }).then((batch) => ({ slot, batch })),
      );
      return true;
    };

    // Every launched batch has finished: the next run starts at the first unlaunched one.
    const carryOn = () => continueAsNew<typeof campaignSendWorkflow>({ ...input, resume: { progress, ratePerSecond, retryDelaysSeconds, maxHistoryEvents } });

    for (;;) {
      const historyFull = workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxHistoryEvents;
      while (!stopped && !capReached && !historyFull && running.size < parallelBatches && (await launch()));
      if (!running.size) {
        // Nothing runs and the history is full before the rest of the audience was launched (a
        // rate-capped send, one batch at a time, finds it so here): carry on in a fresh run. Runs
        // recorded before the patch ended SENT here, the rest of their audience unsent.
        if (historyFull && !stopped && !capReached && !(planEnded && !planned.length) && patched(CONTINUE_WHEN_IDLE_PATCH)) await carryOn();
        break;
      }
      const { slot, batch } = await Promise.race(running.values());
      running.delete(slot);
      if (batch.stopped) stopped = true;
      // The cap is reached: no new batch starts; those running finish what they reserved.
      if (batch.capReached) capReached ??= batch.capReached;
      progress.batches++;
      recipientsInWindow += batch.recipients;
      progress.recipients += batch.recipients;
      progress.sent += batch.sent;
      progress.failed += batch.failed;
      progress.suppressed += batch.suppressed;
      if (batch.retry.length) {
        progress.retried += batch.retry.length;
        await retryLater(input.projectId, input.campaignId, batch.retry, retryDelaysSeconds);
      }
      if (ratePerSecond) {
        const dueMs = (recipientsInWindow / ratePerSecond) * 1000 - (Date.now() - windowStartedAt);
        if (dueMs > 0) await sleep(dueMs);
      }
      const allLaunched = planEnded && !planned.length;
      if (historyFull && !running.size && !allLaunched && !stopped && !capReached) await carryOn();
    }
    if (capReached && !stopped) {
      await stopCampaignAtCap({ campaignId: input.campaignId, category: capReached.category, limit: capReached.limit, sent: progress.sent });
      progress.phase = 'STOPPED_AT_CAP';
      return progress;
    }
    if (stopped) {
      // Cancelled without reaching this run (Temporal was unreachable then): tidy up the same way.
      await cancelCampaignSend({ campaignId: input.campaignId });
      progress.phase = 'CANCELLED';
      return progress;
    }
    await finishCampaignSend({ campaignId: input.campaignId });
    progress.phase = 'SENT';
    return progress;
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled through Temporal: the API marked the campaign already; an operator's cancel in
    // the UI did not, so the campaign is marked here, whatever cancelled the run.
    await CancellationScope.nonCancellable(() => cancelCampaignSend({ campaignId: input.campaignId }));
    progress.phase = 'CANCELLED';
    return progress;
  }
}

/** Runs recorded before this ended the send where it should have continued as new (see the loop). */
const CONTINUE_WHEN_IDLE_PATCH = 'campaign-continue-when-idle';

/**
 * Runs recorded before this started one delivery workflow for a batch's retries, however many;
 * newer ones start one per MAX_EMAILS_PER_DELIVERY emails, so each names all its emails in EmailIds.
 */
const CHUNKED_RETRIES_PATCH = 'campaign-retries-in-chunks';

/** Temporarily failed campaign emails get the transactional delivery's retries, in delivery workflows of their own. */
async function retryLater(projectId: string, campaignId: string, emailIds: string[], retryDelaysSeconds: number[]): Promise<void> {
  // Only a retry list longer than one workflow's asks (and records the marker): shorter ones start the same as before.
  const chunks = emailIds.length > MAX_EMAILS_PER_DELIVERY && patched(CHUNKED_RETRIES_PATCH) ? deliveryChunks(emailIds) : [emailIds];
  await Promise.all(
    chunks.map((chunk) =>
      startChild(emailDeliveryWorkflow, {
        ...deliveryWorkflowStart({
          taskQueue: workflowInfo().taskQueue,
          workflowId: deliveryWorkflowIds.batch(chunk),
          projectId,
          emailIds: chunk,
          retryDelaysSeconds,
          campaignId,
        }),
        parentClosePolicy: ParentClosePolicy.ABANDON,
      }),
    ),
  );
}
