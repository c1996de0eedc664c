import { Migration } from '@mikro-orm/migrations';

/**
 * One index where two were: `emails_contact_campaign_unique (contact_id, campaign_id)` keeps the
 * invariant of `emails_campaign_contact_unique` (a campaign mails a contact at most once: NULLs
 * are distinct, so emails of no campaign, or of no contact, never conflict) and answers what
 * `emails_contact_created_index (contact_id, created_at)` answered: a contact's emails
 * (`GET /emails?contactId=`, sorted after the lookup: a contact has few), the condition compiler's
 * row queries, and the cascade of a contact's deletion. A wave's insert names it in its
 * `on conflict (contact_id, campaign_id)`; a batch's recorded contacts (`campaign_id = ? and
 * contact_id = any(…)`) are one probe each. Every email takes one index entry fewer (issue 39,
 * item 4; docs/architecture/indexes.md).
 */
export class Migration20261203010000EmailContactCampaignUnique extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create unique index emails_contact_campaign_unique on emails (contact_id, campaign_id);
      drop index if exists emails_campaign_contact_unique;
      drop index if exists emails_contact_created_index;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      create index if not exists emails_contact_created_index on emails (contact_id, created_at);
      create unique index if not exists emails_campaign_contact_unique on emails (campaign_id, contact_id) where campaign_id is not null;
      drop index if exists emails_contact_campaign_unique;
    `);
  }
}
