import { Migration } from '@mikro-orm/migrations';

/**
 * Drops `emails_message_id_index`. Only delivery reports looked emails up by Message-ID, and every
 * Message-ID Mailroom writes is `<email id@sending domain>`: the report's email is now found by the
 * id read out of it (its primary key) and checked against the stored Message-ID
 * (db/emails/emailFeedbackRepository.ts). Every email, a campaign's included, takes one index entry
 * fewer (issue 39, item 4; docs/architecture/indexes.md).
 */
export class Migration20261202000000EmailMessageIdIndexDropped extends Migration {
  override async up(): Promise<void> {
    this.addSql(`drop index if exists emails_message_id_index;`);
  }

  override async down(): Promise<void> {
    this.addSql(`create index if not exists emails_message_id_index on emails (message_id);`);
  }
}
