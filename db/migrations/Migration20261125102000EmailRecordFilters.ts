import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for GET /emails' filters (contract 20) that would otherwise read a project's emails from
 * the newest until a page is found: all of them when few or none match (a rare or absent status, a
 * campaign that is not the newest, one `to` address), while with these each answers from its index.
 * Filters the existing indexes already serve are left alone: no filter and dense statuses
 * (project_id, created_at, id), contactId (contact_id, created_at); so is source, since no source
 * is rare enough in practice to be worth an index every email pays for. The EXPLAIN ANALYZE figures
 * before and after are in docs/decisions.md ("Email records", "Indexes for `GET /emails`' filters").
 *
 * Each is shaped to cost a campaign's sending little, since every index takes an entry for each
 * row version (the claim and the outcome update write new versions: status is in index predicates):
 * - status: every status. A first version left out QUEUED and SENDING (so a campaign email's insert
 *   and claim added nothing), but then `status=QUEUED` with none queued walked the project's whole
 *   history, longer the more mail a project has sent. Two entries per campaign email (insert,
 *   claim) are the price of every status filter answering from the index.
 * - to: a hash index over lower(to_address): smaller than a btree (the address is not kept in it)
 *   and no text comparisons on insert; one address's emails are few, sorted after.
 * - campaign: (campaign_id, created_at, id) for campaign mail only.
 */
export class Migration20261125102000EmailRecordFilters extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create index emails_project_status_created_index on emails (project_id, status, created_at, id);
      create index emails_to_address_index on emails using hash (lower(to_address));
      create index emails_campaign_created_index on emails (campaign_id, created_at, id) where campaign_id is not null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists emails_project_status_created_index;
      drop index if exists emails_to_address_index;
      drop index if exists emails_campaign_created_index;
    `);
  }
}
