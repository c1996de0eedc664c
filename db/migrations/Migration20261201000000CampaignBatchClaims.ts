import { Migration } from '@mikro-orm/migrations';

/**
 * A campaign batch's claim: one row per running batch (its campaign and where it starts) naming
 * the delivery attempt (the activity attempt) that owns it, instead of a claim on each email. A
 * retried attempt takes the row over, so the superseded one finds it gone at its next wave and
 * stops. `pending_wave` holds the last wave the owner recorded (its emails already SENT) whose
 * hand-over is not known yet: the next round records its events, or a retried attempt (or the
 * end of the send, for a dead one's) hands it over again. Written once per wave (not indexed
 * columns: a HOT update); gone when the batch ends.
 */
export class Migration20261201000000CampaignBatchClaims extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table campaign_batch_claims (
        campaign_id uuid not null references campaigns (id) on delete cascade,
        batch_start text not null,
        attempt text not null,
        pending_wave uuid[] not null default '{}',
        updated_at timestamptz not null default now(),
        primary key (campaign_id, batch_start)
      ) with (fillfactor = 70);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists campaign_batch_claims;`);
  }
}
