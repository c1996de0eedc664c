import type { EntityManager } from '@mikro-orm/postgresql';
import type { CampaignStatus, CampaignStopReason } from '../../db/campaigns/campaignRepository';
import { campaignSendRepository } from '../../db/campaigns/campaignSendRepository';
import { campaignStatusRepository, type CampaignTarget, type StatusColumns, type TransitionedCampaign } from '../../db/campaigns/campaignStatusRepository';
import type { UsageCategory } from '../billing/usageCaps';
import { CAMPAIGN_WAVE, campaignBatchOwners } from './campaignBatchClaims';

/**
 * Every change of a campaign's status, stated once: the states it may leave from and those it
 * may go to. SENT and CANCELLED are final. Each change is one conditional UPDATE
 * (campaignStatusRepository.transition): a campaign in any other state is left as it is, so
 * concurrent changes race safely and the loser learns it from a null.
 */
export const CAMPAIGN_TRANSITIONS = {
  /** POST /campaigns/:id/send: now (SENDING) or at a later scheduledFor (SCHEDULED). */
  start: { from: ['DRAFT'], to: ['SCHEDULED', 'SENDING'] },
  /** Its workflow could not be started: back to DRAFT from the state the start set. */
  undoStart: { from: ['SCHEDULED', 'SENDING'], to: ['DRAFT'] },
  /** The workflow's time has come; a repeat finds it SENDING and moves it again. */
  begin: { from: ['SCHEDULED', 'SENDING'], to: ['SENDING'] },
  /** Every recipient has been handed to the transport. */
  finish: { from: ['SENDING'], to: ['SENT'] },
  /** Cancelled through the API or Temporal, or stopped by a monthly cap or a disabled project (with a stop reason). */
  cancel: { from: ['SCHEDULED', 'SENDING'], to: ['CANCELLED'] },
} as const satisfies Record<string, { from: readonly CampaignStatus[]; to: readonly CampaignStatus[] }>;

/** States in which a campaign may still be edited (contract section 11): before its send begins. */
export const EDITABLE_STATUSES: readonly CampaignStatus[] = ['DRAFT', 'SCHEDULED'];

/** States in which a send is under way: such a campaign can be cancelled, not deleted. */
export const ACTIVE_STATUSES: readonly CampaignStatus[] = ['SCHEDULED', 'SENDING'];

type Transition = keyof typeof CAMPAIGN_TRANSITIONS;
type From<T extends Transition> = (typeof CAMPAIGN_TRANSITIONS)[T]['from'][number];
type To<T extends Transition> = (typeof CAMPAIGN_TRANSITIONS)[T]['to'][number];

/** Makes one row of the table; `from` narrows its states (never widens them). */
function move<T extends Transition>(
  em: EntityManager,
  target: CampaignTarget,
  transition: T,
  to: To<T>,
  options: { from?: ReadonlyArray<From<T>>; set?: StatusColumns } = {},
): Promise<TransitionedCampaign | null> {
  const allowed: { from: readonly CampaignStatus[]; to: readonly CampaignStatus[] } = CAMPAIGN_TRANSITIONS[transition];
  const from = options.from ?? allowed.from;
  if (!allowed.to.includes(to) || from.some((status) => !allowed.from.includes(status))) {
    throw new Error(`campaign status: ${transition} cannot move ${from.join('/')} to ${to}`);
  }
  return campaignStatusRepository.transition(em, target, { from, to, set: options.set });
}

/** The monthly cap that stopped a send, and how far it got. */
export interface CapStop {
  category: UsageCategory;
  limit: number | null;
  sent: number;
}

export const campaignStatus = {
  /** The status now, to say why a change did not happen (null: no such campaign). */
  current: (em: EntityManager, target: CampaignTarget) => campaignStatusRepository.currentStatus(em, target),

  /** DRAFT → SENDING, or SCHEDULED when `scheduledFor` (a time still to come) is given. Null when it was not a DRAFT. */
  start: (em: EntityManager, target: CampaignTarget, scheduledFor: Date | null) =>
    move(em, target, 'start', scheduledFor ? 'SCHEDULED' : 'SENDING', { set: { scheduledFor } }),

  /** Back to DRAFT, only from `status` (what the start set): a campaign cancelled or begun meanwhile stays as it is. */
  undoStart: (em: EntityManager, target: CampaignTarget, status: 'SCHEDULED' | 'SENDING') =>
    move(em, target, 'undoStart', 'DRAFT', { from: [status], set: { scheduledFor: null } }),

  /** SCHEDULED → SENDING; true when the campaign is (now) SENDING, false when it was cancelled or deleted. */
  async begin(em: EntityManager, campaignId: string): Promise<boolean> {
    return (await move(em, { campaignId }, 'begin', 'SENDING')) !== null;
  },

  /** SENDING → SENT with sentAt; false when it was cancelled meanwhile. */
  async finish(em: EntityManager, campaignId: string): Promise<boolean> {
    return (await move(em, { campaignId }, 'finish', 'SENT', { set: { sentAt: true } })) !== null;
  },

  /**
   * SCHEDULED or SENDING → CANCELLED with cancelledAt, and `stopReason` when the send stopped
   * itself. Null when the campaign was in no such state (or is not there).
   */
  cancel: (em: EntityManager, target: CampaignTarget, stopReason: CampaignStopReason | null = null) =>
    move(em, target, 'cancel', 'CANCELLED', { set: { cancelledAt: true, stopReason } }),

  /**
   * Ends a send from its workflow: CANCELLED (see cancel) and, in the same transaction, the
   * campaign's emails recorded but never attempted withdrawn: they were not sent and now never
   * will be. Then, once that is committed, the emails its batches recorded claimed and can no
   * longer hand over (a batch still running lets go of its own as it stops; this finds those of
   * a batch whose worker died). Safe to repeat, and the withdrawal happens even when the API
   * cancelled first.
   */
  async endSend(em: EntityManager, campaignId: string, stopReason: CampaignStopReason | null = null): Promise<void> {
    await em.transactional(async (tx) => {
      await campaignStatus.cancel(tx, { campaignId }, stopReason);
      await campaignSendRepository.withdrawUnattempted(tx, campaignId);
    });
    await campaignSendRepository.withdrawUnsentClaims(em, campaignId, campaignBatchOwners(campaignId), CAMPAIGN_WAVE);
  },

  /** Ends a send its monthly cap stopped (see endSend), with the reason the campaign shows. */
  stopAtCap: (em: EntityManager, campaignId: string, cap: CapStop) =>
    campaignStatus.endSend(em, campaignId, {
      code: 'BILLING_LIMIT_EXCEEDED',
      category: cap.category,
      limit: cap.limit,
      message: `Stopped after ${cap.sent} emails: the project's monthly ${cap.category} cap${cap.limit === null ? '' : ` of ${cap.limit}`} is reached. Raise it with PUT /users/@me/projects/:id/billing-limits.`,
    }),

  /**
   * Ends a send whose project was disabled (see endSend): there is no paused state in the
   * campaign statuses of the specification, and a disabled project's sends are refused, so the
   * campaign is CANCELLED with the reason it shows. Mail already handed over stays sent.
   */
  stopForDisabledProject: (em: EntityManager, campaignId: string, disabledReason: string | null) =>
    campaignStatus.endSend(em, campaignId, {
      code: 'PROJECT_DISABLED',
      disabledReason,
      message:
        disabledReason === 'PAYMENT_FAILED'
          ? 'Stopped: the project was disabled because its last payment failed (mail already handed over stays sent).'
          : 'Stopped: the project was disabled (mail already handed over stays sent).',
    }),
};
