import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Logger } from 'pino';
import type { TemporalHandle } from '../../temporal/client';
import { badRequest, validationFailed } from '../../lib/errors';
import type { CampaignRow, CampaignStatus } from '../../db/campaigns/campaignRepository';
import { startWorkflow, workflowStartLogFields, WorkflowStartError } from '../../temporal/startWorkflow';
import { CampaignIdSearchAttribute, ProjectIdSearchAttribute } from '../../temporal/searchAttributes';
import { campaignWorkflowId } from '../../temporal/deliveryWorkflowStart';

import { usageCaps } from '../billing/usageCaps';
import { unverifiedSenderDomain, type SenderDomainLookup } from '../domains/senderDomainLookup';
import { campaignStatus } from './campaignStatus';

/** What starting and cancelling a campaign's send needs. */
export interface CampaignSendingDeps {
  temporal: TemporalHandle;
  logger: Logger;
}

export interface SendStarted {
  id: string;
  name: string;
  status: CampaignStatus;
  scheduledFor: Date | null;
}

/**
 * POST /campaigns/:id/send: a DRAFT whose sender domain is still verified and whose audience is
 * still there starts its send (startCampaignSend). What was valid when the draft was saved may not
 * be now: the domain lost (403), the segment deleted (422). A WorkflowStartError goes to the caller.
 */
export async function sendCampaign(
  deps: CampaignSendingDeps & { senderDomains: SenderDomainLookup },
  em: EntityManager,
  campaign: CampaignRow,
  scheduledFor: Date | null,
): Promise<SendStarted> {
  if (campaign.status !== 'DRAFT') throw notDraft('sent', campaign.status);
  if (!(await deps.senderDomains.findVerified(campaign.projectId, campaign.from))) throw unverifiedSenderDomain(campaign.from);
  if (campaign.audienceType === 'SEGMENT' && !campaign.segmentId) {
    throw validationFailed([
      { field: 'segmentId', message: "The campaign's segment was deleted; choose another audience with PUT before sending", code: 'invalid_type' },
    ]);
  }
  return startCampaignSend(deps, em, campaign, scheduledFor);
}

/**
 * Starts a DRAFT's send: now (SENDING) or at `scheduledFor` (SCHEDULED); a date already past
 * sends now. The state moves first, and only from DRAFT, in one conditional UPDATE: of two
 * concurrent sends exactly one moves it and starts the workflow, the other gets the 400 any
 * non-draft gets. If the workflow cannot be started, the campaign goes back to DRAFT (unless it
 * was cancelled meanwhile) and the WorkflowStartError goes to the caller (the API answers 503 to retry).
 */
async function startCampaignSend(deps: CampaignSendingDeps, em: EntityManager, campaign: CampaignRow, scheduledFor: Date | null): Promise<SendStarted> {
  const later = scheduledFor && scheduledFor.getTime() > Date.now() ? scheduledFor : null;
  const status = later ? 'SCHEDULED' : 'SENDING';
  // A campaign sent now into a campaigns cap already used up would send nothing (contract 17).
  if (!later) {
    const refusal = await usageCaps.wouldExceed(em, campaign.projectId, 'campaigns', 1);
    if (refusal) throw refusal;
  }
  const target = { campaignId: campaign.id, projectId: campaign.projectId };
  const moved = await em.transactional((tx) => campaignStatus.start(tx, target, later));
  if (!moved) throw notDraft('sent', (await campaignStatus.current(em, target)) ?? campaign.status);

  try {
    await startWorkflow(deps.temporal, 'campaignSendWorkflow', {
      workflowId: campaignWorkflowId(campaign.id),
      taskQueue: deps.temporal.taskQueue,
      args: [{ campaignId: campaign.id, projectId: campaign.projectId }],
      typedSearchAttributes: [
        { key: ProjectIdSearchAttribute, value: campaign.projectId },
        { key: CampaignIdSearchAttribute, value: campaign.id },
      ],
    });
  } catch (err) {
    // A start that timed out may have succeeded: a running workflow of this campaign is the one wanted.
    if (!(err instanceof WorkflowStartError && err.cause instanceof WorkflowExecutionAlreadyStartedError)) {
      deps.logger.error({ ...workflowStartLogFields(err), campaignId: campaign.id, projectId: campaign.projectId }, 'could not start a campaign send');
      await campaignStatus.undoStart(em, target, status);
      throw err;
    }
  }
  return { id: moved.id, name: moved.name, status: moved.status, scheduledFor: moved.scheduledFor };
}

/**
 * Cancels a SCHEDULED or SENDING campaign: the state moves first (one conditional UPDATE, so a
 * campaign that finished meanwhile is not marked cancelled), then its workflow is cancelled
 * through Temporal. Mail already handed over stays sent. The database state is what counts: if
 * Temporal cannot be reached, the failure is logged and the workflow, which reads the campaign's
 * status before sending more, stops on its own.
 */
export async function cancelCampaignSend(
  deps: CampaignSendingDeps,
  em: EntityManager,
  campaign: CampaignRow,
): Promise<{ id: string; name: string; status: CampaignStatus; cancelledAt: Date }> {
  const target = { campaignId: campaign.id, projectId: campaign.projectId };
  const cancelled = await campaignStatus.cancel(em, target);
  if (!cancelled?.cancelledAt) {
    const state = (await campaignStatus.current(em, target)) ?? campaign.status;
    throw badRequest(`Only a SCHEDULED or SENDING campaign can be cancelled; this one is ${state}`, { details: { status: state } });
  }

  try {
    await deps.temporal.within(() => deps.temporal.client.workflow.getHandle(campaignWorkflowId(campaign.id)).cancel());
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) {
      deps.logger.error(
        { err, campaignId: campaign.id, projectId: campaign.projectId },
        'could not cancel a campaign workflow; it stops when it sees the campaign cancelled',
      );
    }
  }
  return { id: cancelled.id, name: cancelled.name, status: cancelled.status, cancelledAt: cancelled.cancelledAt };
}

export function notDraft(action: 'sent' | 'edited', status: CampaignStatus) {
  const allowed = action === 'sent' ? 'Only a DRAFT campaign can be sent' : 'Only a DRAFT or SCHEDULED campaign can be edited';
  return badRequest(`${allowed}; this one is ${status}`, { details: { status } });
}
