import { Migration } from '@mikro-orm/migrations';

/**
 * The SMTP relay (contract 20) answers a resubmitted message with the ids it answered the first
 * time, so its idempotency key (derived from the Message-ID) keeps that answer: `response` holds
 * what the first submission was answered (the email ids); null for HTTP keys, which answer 409.
 */
export class Migration20261125130000RelayIdempotency extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table idempotency_keys add column response jsonb;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table idempotency_keys drop column if exists response;`);
  }
}
