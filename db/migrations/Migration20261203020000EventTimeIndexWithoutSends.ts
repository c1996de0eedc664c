import { Migration } from '@mikro-orm/migrations';

/**
 * `events_project_created_index` leaves out `email.sent`. Its readers are the activity feed's
 * event source and its five-minute count (db/analytics/activityRepository.ts), which now take a
 * project's sends from `emails` by `sent_at` (`emails_project_sent_index`): an `email.sent` event
 * is written exactly when its email's `sent_at` is set. Lists of events order by `seq` and keep
 * their indexes whole. Each email takes one index entry fewer (issue 39, item 4;
 * docs/architecture/indexes.md).
 */
export class Migration20261203020000EventTimeIndexWithoutSends extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      drop index if exists events_project_created_index;
      create index events_project_created_index on events (project_id, created_at, id) where name <> 'email.sent';
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists events_project_created_index;
      create index events_project_created_index on events (project_id, created_at, id);
    `);
  }
}
