import type { EntityManager } from '@mikro-orm/postgresql';
import type { CampaignStatus, CampaignStopReason, CampaignTableRow } from './campaignRepository';
import { dateOrNull, queryRows } from '../sql/rows';

/** Which campaign: by id, and within its project when the caller is scoped to one (the API). */
export interface CampaignTarget {
  campaignId: string;
  projectId?: string;
}

/** The columns that change with the status, besides updated_at (always now()). */
export interface StatusColumns {
  /** Set to this value (null clears it). */
  scheduledFor?: Date | null;
  /** Set to now(). */
  sentAt?: true;
  /** Set to now() unless already set. */
  cancelledAt?: true;
  /** Set to this reason unless it is null (an earlier reason is kept). */
  stopReason?: CampaignStopReason | null;
}

export interface StatusChange {
  /** The states the campaign may be in for the change to happen; any other leaves it as it is. */
  from: readonly CampaignStatus[];
  to: CampaignStatus;
  set?: StatusColumns;
}

/** The campaign as the change left it. */
export interface TransitionedCampaign {
  id: string;
  name: string;
  status: CampaignStatus;
  scheduledFor: Date | null;
  sentAt: Date | null;
  cancelledAt: Date | null;
}

/**
 * The one writer of `campaigns.status`. The services say which changes are allowed
 * (services/campaigns/campaignStatus.ts); this only makes one of them.
 */
export const campaignStatusRepository = {
  /**
   * Moves the campaign to `to`, with the columns in `set`, only if it is in one of the `from`
   * states: the check and the write are one conditional UPDATE, so of concurrent changes each
   * sees the state the other left. Null when no campaign matched (missing, another project's,
   * or in another state).
   */
  async transition(em: EntityManager, target: CampaignTarget, change: StatusChange): Promise<TransitionedCampaign | null> {
    if (!change.from.length) return null;
    const assignments = ['status = ?'];
    const params: unknown[] = [change.to];
    const set = change.set ?? {};
    if (set.scheduledFor !== undefined) {
      assignments.push('scheduled_for = ?');
      params.push(set.scheduledFor);
    }
    if (set.sentAt) assignments.push('sent_at = now()');
    if (set.cancelledAt) assignments.push('cancelled_at = coalesce(cancelled_at, now())');
    if (set.stopReason !== undefined) {
      assignments.push('stop_reason = coalesce(?::jsonb, stop_reason)');
      params.push(set.stopReason ? JSON.stringify(set.stopReason) : null);
    }
    const where = ['id = ?'];
    params.push(target.campaignId);
    if (target.projectId !== undefined) {
      where.push('project_id = ?');
      params.push(target.projectId);
    }
    where.push(`status in (${change.from.map(() => '?').join(', ')})`);
    params.push(...change.from);
    const rows = await queryRows<Pick<CampaignTableRow, 'id' | 'name' | 'status' | 'scheduled_for' | 'sent_at' | 'cancelled_at'>>(
      em,
      `update campaigns set ${assignments.join(', ')}, updated_at = now()
       where ${where.join(' and ')}
       returning id, name, status, scheduled_for, sent_at, cancelled_at`,
      params,
    );
    if (!rows.length) return null;
    const row = rows[0];
    return {
      id: row.id,
      name: row.name,
      status: row.status,
      scheduledFor: dateOrNull(row.scheduled_for),
      sentAt: dateOrNull(row.sent_at),
      cancelledAt: dateOrNull(row.cancelled_at),
    };
  },

  /** The campaign's status now (null when it is not there), to say why a change did not happen. */
  async currentStatus(em: EntityManager, target: CampaignTarget): Promise<CampaignStatus | null> {
    const rows = await queryRows<Pick<CampaignTableRow, 'status'>>(
      em,
      `select status from campaigns where id = ?${target.projectId !== undefined ? ' and project_id = ?' : ''}`,
      target.projectId !== undefined ? [target.campaignId, target.projectId] : [target.campaignId],
    );
    return rows.length ? rows[0].status : null;
  },
};
