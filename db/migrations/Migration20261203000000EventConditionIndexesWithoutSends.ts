import { Migration } from '@mikro-orm/migrations';

/**
 * The two condition indexes of `events` leave out `email.sent`, the one event every email writes.
 *
 * An `email.sent` event is recorded exactly when its email's `sent_at` is set (the delivery's
 * outcome statement and a campaign's next round write both; a relay's refusal clears `sent_at`
 * and writes `email.failed` instead), so the condition compiler answers `event.email.sent` from
 * `emails` (`emails_project_sent_index`, `emails_contact_created_index`), exactly as it answers
 * `email.sent`. Every other name still reads these indexes: the compiler's queries name the event
 * by a bound value, which PostgreSQL plans as a constant (unnamed statements get a custom plan),
 * so `name = 'signup'` proves the predicate. Each email, a campaign's included, takes two index
 * entries fewer (issue 39, item 4; docs/architecture/indexes.md).
 */
export class Migration20261203000000EventConditionIndexesWithoutSends extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      drop index if exists events_project_name_created_index;
      create index events_project_name_created_index on events (project_id, name, created_at) include (contact_id) where name <> 'email.sent';
      drop index if exists events_contact_name_created_index;
      create index events_contact_name_created_index on events (contact_id, name, created_at) where name <> 'email.sent';
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists events_project_name_created_index;
      create index events_project_name_created_index on events (project_id, name, created_at) include (contact_id);
      drop index if exists events_contact_name_created_index;
      create index events_contact_name_created_index on events (contact_id, name, created_at);
    `);
  }
}
