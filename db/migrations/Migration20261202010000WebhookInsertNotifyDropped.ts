import { Migration } from '@mikro-orm/migrations';

/**
 * Drops the NOTIFY that every insert into `webhook_messages` sent. A transaction that notifies
 * takes PostgreSQL's one notification lock at commit and holds it through its WAL flush, so every
 * event recorded for a project with an endpoint committed one after another: sampled during
 * `bench:webhooks` (200 tracked events/s, three endpoints), /v1/track's statement waited on
 * `Lock:object` in 17 % of its active samples. The worker now looks for due messages every 500 ms
 * instead (services/webhooks/webhookWakeups.ts); the rare notifications of a retry by hand and of
 * an endpoint enabled again stay.
 */
export class Migration20261202010000WebhookInsertNotifyDropped extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      drop trigger if exists webhook_messages_notify_due on webhook_messages;
      drop function if exists webhook_messages_notify_due();
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      create function webhook_messages_notify_due() returns trigger language plpgsql as $fn$
      declare
        target text;
      begin
        for target in select distinct endpoint_id::text || ':' || project_id::text from new_rows loop
          perform pg_notify('mailroom_webhook_due', target);
        end loop;
        return null;
      end $fn$;
      create trigger webhook_messages_notify_due after insert on webhook_messages
        referencing new table as new_rows for each statement execute function webhook_messages_notify_due();
    `);
  }
}
