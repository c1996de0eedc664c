import { Migration } from '@mikro-orm/migrations';

/**
 * The suppression list as an API (contract 20): an owner adds an address by hand (reason MANUAL)
 * and pages through the list newest first, which the primary key (project_id, email) cannot order.
 */
export class Migration20261125101000SuppressionList extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table email_suppressions drop constraint email_suppressions_reason_check,
        add constraint email_suppressions_reason_check check (reason in ('BOUNCE', 'COMPLAINT', 'MANUAL'));
      create index email_suppressions_project_created_index on email_suppressions (project_id, created_at desc, email desc);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists email_suppressions_project_created_index;
      delete from email_suppressions where reason = 'MANUAL';
      alter table email_suppressions drop constraint email_suppressions_reason_check,
        add constraint email_suppressions_reason_check check (reason in ('BOUNCE', 'COMPLAINT'));
    `);
  }
}
