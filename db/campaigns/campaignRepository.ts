import type { EntityManager } from '@mikro-orm/postgresql';
import { copyName } from '../../lib/copyName';
import { likeContains } from '../contacts/contactQueries';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';

export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export const CAMPAIGN_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const;
export type CampaignType = (typeof CAMPAIGN_TYPES)[number];

export const AUDIENCE_TYPES = ['ALL', 'SEGMENT', 'FILTERED'] as const;
export type AudienceType = (typeof AUDIENCE_TYPES)[number];

export const CAMPAIGN_SORTS = ['name', 'createdAt', 'updatedAt'] as const;
export type CampaignSort = (typeof CAMPAIGN_SORTS)[number];

/** The writable fields, as the API validated them. */
export interface CampaignFields {
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: CampaignType;
  audienceType: AudienceType;
  segmentId: string | null;
  audienceCondition: unknown;
}

/** Counted from the campaign's `emails` rows, so they follow delivery feedback as it arrives. */
export interface CampaignEmailCounts {
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

export interface CampaignRow extends CampaignFields {
  id: string;
  projectId: string;
  status: CampaignStatus;
  scheduledFor: Date | null;
  totalRecipients: number;
  sentCount: number;
  sentAt: Date | null;
  cancelledAt: Date | null;
  /** Why a campaign stopped before its last recipient (a monthly cap, a disabled project), or null. */
  stopReason: CampaignStopReason | null;
  createdAt: Date;
  updatedAt: Date;
  counts: CampaignEmailCounts;
}

export type CampaignStopReason =
  | { code: 'BILLING_LIMIT_EXCEEDED'; category: string; limit: number | null; message: string }
  /** The project was disabled while the campaign was SENDING or before its scheduled time came (PAYMENT_FAILED, ...). */
  | { code: 'PROJECT_DISABLED'; disabledReason: string | null; message: string };

export interface CampaignListQuery {
  page: number;
  pageSize: number;
  status?: CampaignStatus;
  search?: string;
  sort: CampaignSort;
  dir: 'asc' | 'desc';
}

/** A `campaigns` row as a statement returns it (`select c.*`). */
export interface CampaignTableRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from_address: string;
  from_name: string | null;
  reply_to: string | null;
  type: CampaignType;
  status: CampaignStatus;
  audience_type: AudienceType;
  segment_id: string | null;
  audience_condition: unknown;
  scheduled_for: TimestampText | null;
  total_recipients: number;
  sent_count: number;
  sent_at: TimestampText | null;
  cancelled_at: TimestampText | null;
  audience_fixed_at: TimestampText | null;
  /** jsonb, so parsed already; a string only if one was ever stored as a JSON string. */
  stop_reason: CampaignStopReason | string | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

/** SELECT_WITH_COUNTS's row: the campaign and its email counters (null where the join found none). */
interface CampaignWithCountsRow extends CampaignTableRow {
  delivered_count: number | null;
  opened_count: number | null;
  clicked_count: number | null;
  bounced_count: number | null;
  complained_count: number | null;
}

function toCampaign(row: CampaignWithCountsRow): CampaignRow {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    description: row.description,
    subject: row.subject,
    body: row.body,
    from: row.from_address,
    fromName: row.from_name,
    replyTo: row.reply_to,
    type: row.type,
    status: row.status,
    audienceType: row.audience_type,
    segmentId: row.segment_id,
    audienceCondition: row.audience_condition ?? null,
    scheduledFor: dateOrNull(row.scheduled_for),
    totalRecipients: row.total_recipients,
    sentCount: row.sent_count,
    sentAt: dateOrNull(row.sent_at),
    cancelledAt: dateOrNull(row.cancelled_at),
    stopReason: (typeof row.stop_reason === 'string' ? (JSON.parse(row.stop_reason) as CampaignStopReason) : row.stop_reason) ?? null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    counts: {
      delivered: row.delivered_count ?? 0,
      opened: row.opened_count ?? 0,
      clicked: row.clicked_count ?? 0,
      bounced: row.bounced_count ?? 0,
      complained: row.complained_count ?? 0,
    },
  };
}

/**
 * A campaign with its email counters. An email that was opened or clicked evidently arrived, so
 * it counts as delivered even where no delivery notification exists (plain SMTP relays send none).
 * Test emails carry no campaign id and so count nowhere.
 */
const SELECT_WITH_COUNTS = `
  select c.*, n.delivered_count, n.opened_count, n.clicked_count, n.bounced_count, n.complained_count
  from campaigns c
  left join lateral (
    select count(*) filter (where e.delivered_at is not null or e.opened_at is not null or e.clicked_at is not null)::int as delivered_count,
           count(*) filter (where e.opened_at is not null)::int as opened_count,
           count(*) filter (where e.clicked_at is not null)::int as clicked_count,
           count(*) filter (where e.bounced_at is not null)::int as bounced_count,
           count(*) filter (where e.complained_at is not null)::int as complained_count
    from emails e where e.campaign_id = c.id
  ) n on true`;

const columns: Record<keyof CampaignFields, string> = {
  name: 'name',
  description: 'description',
  subject: 'subject',
  body: 'body',
  from: 'from_address',
  fromName: 'from_name',
  replyTo: 'reply_to',
  type: 'type',
  audienceType: 'audience_type',
  segmentId: 'segment_id',
  audienceCondition: 'audience_condition',
};
const FIELD_KEYS = Object.keys(columns) as Array<keyof CampaignFields>;

const columnValue = (key: keyof CampaignFields, fields: Partial<CampaignFields>) =>
  key === 'audienceCondition' ? (fields.audienceCondition == null ? null : JSON.stringify(fields.audienceCondition)) : fields[key];

// Names sort as a person reads a list: case does not split "apple" from "Banana".
const sortExpression: Record<CampaignSort, string> = { name: 'lower(c.name)', createdAt: 'c.created_at', updatedAt: 'c.updated_at' };

export interface CampaignStats {
  totalRecipients: number;
  sentCount: number;
  deliveredCount: number;
  openedCount: number;
  clickedCount: number;
  bouncedCount: number;
  complainedCount: number;
  unsubscribedCount: number;
}

export const campaignRepository = {
  async create(em: EntityManager, projectId: string, fields: CampaignFields): Promise<CampaignRow> {
    const rows = await queryRows<{ id: string }>(
      em,
      `insert into campaigns (project_id, ${FIELD_KEYS.map((key) => columns[key]).join(', ')})
       values (?, ${FIELD_KEYS.map(() => '?').join(', ')})
       returning id`,
      [projectId, ...FIELD_KEYS.map((key) => columnValue(key, fields))],
    );
    return (await this.findById(em, projectId, rows[0].id))!;
  },

  /** Null for a missing campaign and for another project's: the two are not told apart. */
  async findById(em: EntityManager, projectId: string, id: string): Promise<CampaignRow | null> {
    const rows = await queryRows<CampaignWithCountsRow>(em, `${SELECT_WITH_COUNTS} where c.project_id = ? and c.id = ?`, [projectId, id]);
    return rows.length ? toCampaign(rows[0]) : null;
  },

  /**
   * Sets the given fields, only while the campaign is in one of `statuses`: the check and the
   * write are one statement, so a send starting meanwhile cannot be edited under it.
   * Null when no campaign in those states matched (missing, or its state changed).
   */
  async updateWhileStatusIn(
    em: EntityManager,
    projectId: string,
    id: string,
    statuses: readonly CampaignStatus[],
    changes: Partial<CampaignFields>,
  ): Promise<CampaignRow | null> {
    const entries = FIELD_KEYS.filter((key) => changes[key] !== undefined);
    const rows = await queryRows<{ id: string }>(
      em,
      `update campaigns set ${entries.map((key) => `${columns[key]} = ?, `).join('')}updated_at = now()
       where project_id = ? and id = ? and status in (${statuses.map(() => '?').join(', ')})
       returning id`,
      [...entries.map((key) => columnValue(key, changes)), projectId, id, ...statuses],
    );
    return rows.length ? this.findById(em, projectId, id) : null;
  },

  /**
   * Deletes unless the campaign is in one of `activeStatuses` (the services say which: a send under
   * way). 'active' names the refusal; 'missing' a campaign that is not there.
   */
  async deleteUnlessActive(
    em: EntityManager,
    projectId: string,
    id: string,
    activeStatuses: readonly CampaignStatus[],
  ): Promise<'deleted' | 'missing' | { active: CampaignStatus }> {
    const rows = await queryRows<{ status: CampaignStatus; removed: number }>(
      em,
      `with target as (select id, status from campaigns where project_id = ? and id = ? for update),
            removed as (delete from campaigns where id in (select id from target where status not in (${activeStatuses.map(() => '?').join(', ')})) returning id)
       select t.status, (select count(*) from removed)::int as removed from target t`,
      [projectId, id, ...activeStatuses],
    );
    if (!rows.length) return 'missing';
    return rows[0].removed > 0 ? 'deleted' : { active: rows[0].status };
  },

  /** A new DRAFT with every content and audience field of the original; its name gets " (copy)". */
  async duplicate(em: EntityManager, projectId: string, id: string, maxNameLength: number): Promise<CampaignRow | null> {
    const original = await this.findById(em, projectId, id);
    if (!original) return null;
    return this.create(em, projectId, { ...original, name: copyName(original.name, maxNameLength) });
  },

  async segmentExists(em: EntityManager, projectId: string, segmentId: string): Promise<boolean> {
    const rows = await queryRows(em, `select 1 from segments where project_id = ? and id = ?`, [projectId, segmentId]);
    return rows.length > 0;
  },

  /**
   * One offset page and the number of matches. Search is a case-insensitive substring match on
   * name, subject or sender address; the order always ends with id, so pages never overlap or skip.
   */
  async list(em: EntityManager, projectId: string, q: CampaignListQuery): Promise<{ campaigns: CampaignRow[]; total: number }> {
    const where = ['c.project_id = ?'];
    const params: unknown[] = [projectId];
    if (q.status) {
      where.push('c.status = ?');
      params.push(q.status);
    }
    if (q.search) {
      const pattern = likeContains(q.search);
      where.push(`(c.name ilike ? or c.subject ilike ? or c.from_address ilike ?)`);
      params.push(pattern, pattern, pattern);
    }
    const filter = where.join(' and ');
    const dir = q.dir === 'asc' ? 'asc' : 'desc';
    const rows = await queryRows<CampaignWithCountsRow>(
      em,
      `${SELECT_WITH_COUNTS} where ${filter}
       order by ${sortExpression[q.sort]} ${dir}, c.id ${dir}
       limit ? offset ?`,
      [...params, q.pageSize, (q.page - 1) * q.pageSize],
    );
    const [count] = await queryRows<{ n: number }>(em, `select count(*)::int as n from campaigns c where ${filter}`, params);
    return { campaigns: rows.map(toCampaign), total: count.n };
  },

  /**
   * The counters of GET /campaigns/:id/stats. Unsubscribes are attributed to the campaign when a
   * contact it mailed unsubscribed after that email was created: unsubscribe events do not say
   * which email led to them, so this is the usual "unsubscribed since receiving it" measure.
   */
  async stats(em: EntityManager, campaign: CampaignRow): Promise<CampaignStats> {
    const [row] = await queryRows<{ unsubscribed: number }>(
      em,
      `select count(distinct e.contact_id) filter (
                where exists (select 1 from events ev
                              where ev.contact_id = e.contact_id and ev.name = 'contact.unsubscribed' and ev.created_at >= e.created_at))::int as unsubscribed
       from emails e where e.campaign_id = ?`,
      [campaign.id],
    );
    return {
      totalRecipients: campaign.totalRecipients,
      sentCount: campaign.sentCount,
      deliveredCount: campaign.counts.delivered,
      openedCount: campaign.counts.opened,
      clickedCount: campaign.counts.clicked,
      bouncedCount: campaign.counts.bounced,
      complainedCount: campaign.counts.complained,
      unsubscribedCount: row.unsubscribed,
    };
  },
};
