import { Migration } from '@mikro-orm/migrations';

/**
 * A campaign's audience is fixed once, when its send starts: `audience_fixed_at` says it was, so
 * a send that resumes after a crash walks the same recipients and never adds contacts created
 * since. Projects may cap their campaign sending rate (messages per second).
 */
export class Migration20261123100000CampaignSend extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table campaigns add column audience_fixed_at timestamptz;
      alter table projects add column campaign_rate_per_second int check (campaign_rate_per_second is null or campaign_rate_per_second between 1 and 100000);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table campaigns drop column if exists audience_fixed_at;
      alter table projects drop column if exists campaign_rate_per_second;
    `);
  }
}
