import { Migration } from '@mikro-orm/migrations';

/**
 * GET /emails/:id/raw (contract 20) shows the message exactly as it was handed to the relay. The
 * bytes are not stored: every KB written per email costs a campaign throughput. What a rebuild from
 * the row and its attachments lacks is kept instead, in the UPDATE that records the outcome anyway:
 * the Date field's value, the MIME boundary base and the DKIM-Signature field (about 500 bytes).
 * Null for an email no message was offered for (queued, suppressed, failed before an attempt, or
 * sent before this column existed).
 */
export class Migration20261125100000EmailStamps extends Migration {
  override async up(): Promise<void> {
    // No default: adding the column rewrites nothing.
    this.addSql(`alter table emails add column message_stamp jsonb;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table emails drop column if exists message_stamp;`);
  }
}
