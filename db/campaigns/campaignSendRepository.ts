import type { EntityManager } from '@mikro-orm/postgresql';
import type { ContactRow, ContactTableRow } from '../contacts/contactRepository';
import { toContact } from '../contacts/contactRepository';
import type { CampaignStatus, CampaignTableRow } from './campaignRepository';
import type { EmailType } from '../emails/emailRepository';
import { billingUsageRepository } from '../billing/billingUsageRepository';
import { executeBound } from '../sql/boundStatement';
import { dateOrNull, queryRows } from '../sql/rows';

/** What a campaign send reads of its campaign. */
/** A MARKETING or HEADLESS campaign goes only to subscribed contacts; a TRANSACTIONAL one to all its audience. */
export function audienceIsSubscribedOnly(type: EmailType): boolean {
  return type === 'MARKETING' || type === 'HEADLESS';
}

export interface CampaignForSend {
  id: string;
  projectId: string;
  status: CampaignStatus;
  subject: string;
  body: string;
  fromAddress: string;
  fromName: string | null;
  replyTo: string | null;
  type: EmailType;
  audienceType: 'ALL' | 'SEGMENT' | 'FILTERED';
  segmentId: string | null;
  audienceCondition: unknown;
  scheduledFor: Date | null;
  audienceFixedAt: Date | null;
  /** The project's cap on campaign mail per second, if it set one. */
  ratePerSecond: number | null;
  /** The project is disabled (its sends answer 403 PROJECT_DISABLED), and why (PAYMENT_FAILED, or null). */
  projectDisabled: boolean;
  projectDisabledReason: string | null;
}

/** Whether a running send may go on: its campaign still SENDING, its project not disabled. */
export type SendState = { state: 'SENDING' } | { state: 'NOT_SENDING' } | { state: 'PROJECT_DISABLED'; disabledReason: string | null };

/** find's row: the campaign and what the send reads of its project. */
interface CampaignForSendRow extends CampaignTableRow {
  campaign_rate_per_second: number | null;
  project_disabled: boolean;
  project_disabled_reason: string | null;
}

/**
 * A second mapper of the campaigns table, not campaignRepository's toCampaign: a send reads its
 * project's rate and disabled state and the audience's fixing, not the email counters (a lateral
 * count over the campaign's emails at every batch), and names the sender `fromAddress` as the
 * mail it composes does.
 */
function toCampaign(row: CampaignForSendRow): CampaignForSend {
  return {
    id: row.id,
    projectId: row.project_id,
    status: row.status,
    subject: row.subject,
    body: row.body,
    fromAddress: row.from_address,
    fromName: row.from_name,
    replyTo: row.reply_to,
    type: row.type,
    audienceType: row.audience_type,
    segmentId: row.segment_id,
    audienceCondition: typeof row.audience_condition === 'string' ? (JSON.parse(row.audience_condition) as unknown) : row.audience_condition,
    scheduledFor: dateOrNull(row.scheduled_for),
    audienceFixedAt: dateOrNull(row.audience_fixed_at),
    ratePerSecond: row.campaign_rate_per_second ?? null,
    projectDisabled: row.project_disabled === true,
    projectDisabledReason: row.project_disabled_reason ?? null,
  };
}

export const campaignSendRepository = {
  async find(em: EntityManager, campaignId: string): Promise<CampaignForSend | null> {
    const rows = await queryRows<CampaignForSendRow>(
      em,
      `select c.*, p.campaign_rate_per_second, p.disabled as project_disabled, p.disabled_reason as project_disabled_reason
       from campaigns c join projects p on p.id = c.project_id where c.id = ?`,
      [campaignId],
    );
    return rows.length ? toCampaign(rows[0]) : null;
  },

  /**
   * Fixes the audience once (contract 11): every contact the audience selects, subscribed ones
   * only for MARKETING and HEADLESS, in one statement with the mark that it is fixed. A retry
   * after that changes nothing, so a resumed send walks exactly the same recipients.
   * `audience` is a query selecting `contact_id` (all contacts, a segment's members, a condition).
   */
  async fixAudience(em: EntityManager, campaign: CampaignForSend, audience: { sql: string; params: unknown[] }): Promise<number> {
    return em.transactional(async (tx) => {
      const [locked] = await queryRows<Pick<CampaignTableRow, 'audience_fixed_at'>>(tx, `select audience_fixed_at from campaigns where id = ? for update`, [
        campaign.id,
      ]);
      if (!locked?.audience_fixed_at) {
        const subscribedOnly = audienceIsSubscribedOnly(campaign.type);
        await tx.execute(
          `insert into campaign_recipients (campaign_id, contact_id)
           select ?, c.id from contacts c
           where c.project_id = ? and c.id in (${audience.sql}) ${subscribedOnly ? 'and c.subscribed' : ''}
           on conflict do nothing`,
          [campaign.id, campaign.projectId, ...audience.params],
        );
        await tx.execute(
          `update campaigns set audience_fixed_at = now(), updated_at = now(),
             total_recipients = (select count(*) from campaign_recipients where campaign_id = ?)
           where id = ?`,
          [campaign.id, campaign.id],
        );
      }
      const [row] = await queryRows<Pick<CampaignTableRow, 'total_recipients'>>(tx, `select total_recipients from campaigns where id = ?`, [campaign.id]);
      return row.total_recipients;
    });
  },

  /** The next recipients after `afterContactId` (keyset on contact id), with their contacts; deleted contacts drop out. */
  async recipientsPage(
    em: EntityManager,
    campaignId: string,
    afterContactId: string | null,
    limit: number,
  ): Promise<{ contacts: ContactRow[]; lastContactId: string | null }> {
    const ids = await queryRows<{ contact_id: string }>(
      em,
      `select contact_id from campaign_recipients where campaign_id = ? and (?::uuid is null or contact_id > ?::uuid) order by contact_id limit ?`,
      [campaignId, afterContactId, afterContactId, limit],
    );
    if (!ids.length) return { contacts: [], lastContactId: null };
    const idList = `{${ids.map((r) => r.contact_id).join(',')}}`;
    // Bound: em.execute would quote the 500 ids into the SQL text character by character.
    const rows = await executeBound<ContactTableRow>(em, `select * from contacts where id = any(?::uuid[]) order by id`, [idList]);
    return { contacts: rows.map(toContact), lastContactId: ids[ids.length - 1].contact_id };
  },

  /**
   * Where the next `count` batches of `batchSize` start, after `afterContactId`: the first starts
   * there, each next one after the previous one's last recipient. `next` is where the batch after
   * those would start (null at the end of the audience).
   */
  async batchStarts(
    em: EntityManager,
    campaignId: string,
    afterContactId: string | null,
    batchSize: number,
    count: number,
  ): Promise<{ starts: Array<string | null>; next: string | null; remaining: number }> {
    // row_number and count are bigint: strings.
    const ends = await queryRows<{ contact_id: string; n: string; total: string }>(
      em,
      `select contact_id, n, total from (
         select contact_id, row_number() over (order by contact_id) as n, count(*) over () as total
         from (select contact_id from campaign_recipients
               where campaign_id = ? and (?::uuid is null or contact_id > ?::uuid)
               order by contact_id limit ?) page
       ) numbered
       where n % ? = 0 or n = total
       order by n`,
      [campaignId, afterContactId, afterContactId, batchSize * count, batchSize],
    );
    if (!ends.length) return { starts: [], next: null, remaining: 0 };
    const covered = Number(ends[0].total);
    const starts: Array<string | null> = [afterContactId];
    for (const row of ends) if (starts.length < Math.ceil(covered / batchSize)) starts.push(row.contact_id);
    const last = ends[ends.length - 1];
    return { starts, next: covered === batchSize * count ? last.contact_id : null, remaining: covered };
  },

  /**
   * sentCount from the campaign's rollup rows, which the emails table's triggers keep in the same
   * transaction as every sent_at they count: exact, so a repeated batch cannot count twice, and a
   * sum of at most 64 shard rows instead of a count over every email sent so far (which made each
   * batch of a 100,000 campaign visit up to 100,000 rows).
   */
  async refreshSentCount(em: EntityManager, campaignId: string): Promise<number> {
    const [row] = await queryRows<Pick<CampaignTableRow, 'sent_count'>>(
      em,
      `update campaigns set sent_count = (select coalesce(sum(sent), 0) from analytics_campaign_counts where campaign_id = ?), updated_at = now()
       where id = ? returning sent_count`,
      [campaignId, campaignId],
    );
    return row?.sent_count ?? 0;
  },

  /**
   * Withdraws the campaign's emails recorded but never attempted (and releases what they held of
   * the monthly cap): once its send has ended they were not sent and now never will be. Safe to repeat.
   */
  async withdrawUnattempted(em: EntityManager, campaignId: string): Promise<void> {
    await em.execute(
      `with withdrawn as (delete from emails where campaign_id = ? and status = 'QUEUED' and attempts = 0 returning project_id, source, created_at),
       released as (${billingUsageRepository.releaseSql('withdrawn')})
       select 1`,
      [campaignId],
    );
  },

  /**
   * Ends a campaign's claims on emails recorded claimed (insertMany's `claimedBy`) that no
   * delivery can have handed over: once the send has ended (the campaign no longer SENDING, read
   * as committed before this statement began), each batch owner's untouched claims (SENDING,
   * first attempt, never claimed again) after its first `waveSize` ones in contact order are
   * withdrawn like unattempted emails. A batch hands its emails over in contact order, one wave
   * at a time, so those first ones hold the wave a batch may have had in flight (kept SENDING, as
   * a claimed wave in flight was before); a batch still running reads that the send ended before
   * its next wave. Run after the end of the send is committed, not in its transaction: a batch
   * reading the campaign still SENDING may hand over its next wave, and this must see that wave as
   * the first one still held. Safe to repeat.
   */
  async withdrawUnsentClaims(em: EntityManager, campaignId: string, owners: string, waveSize: number): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      em,
      `with held as (
         select id, row_number() over (partition by claimed_by order by contact_id) as n
         from emails
         where campaign_id = ? and status = 'SENDING' and attempts = 1 and claimed_by like ?
       ),
       withdrawn as (
         delete from emails e using held h
         where e.id = h.id and h.n > ? and e.status = 'SENDING' and e.attempts = 1
           and (select status from campaigns where id = ?) is distinct from 'SENDING'
         returning e.project_id, e.source, e.created_at
       ),
       released as (${billingUsageRepository.releaseSql('withdrawn')})
       select count(*)::int as n from withdrawn`,
      [campaignId, owners, waveSize, campaignId],
    );
    return row.n;
  },
};
