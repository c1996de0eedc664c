import { Migration } from '@mikro-orm/migrations';

/**
 * Events are stamped and listed in the order they took effect.
 *
 * Before, an event's `created_at` was its transaction's start (`now()`): a request that waited on
 * a contact's row lock behind another kept the earlier time, so a subscribe and an unsubscribe
 * could be listed in the opposite order of their effect. Now:
 *
 * - `created_at` defaults to `clock_timestamp()`, the moment the row is written (after any lock);
 * - `seq`, from a sequence, numbers events in the order they were written. Writers of one
 *   contact's events hold its row lock, so their `seq` follows the order of their effect whatever
 *   the clock does. Lists and their cursors order by `seq`.
 *
 * Existing events are numbered in their `(created_at, id)` order, the order they were listed in.
 */
export class Migration20261123010000EventOrder extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table events alter column created_at set default clock_timestamp();

      create sequence events_seq_seq as bigint;
      alter table events add column seq bigint;
      update events e set seq = o.n
        from (select id, row_number() over (order by created_at, id) as n from events) o
        where o.id = e.id;
      select setval('events_seq_seq', coalesce((select max(seq) from events), 0) + 1, false);
      alter table events
        alter column seq set default nextval('events_seq_seq'),
        alter column seq set not null;
      alter sequence events_seq_seq owned by events.seq;

      -- The list indexes follow the new order (filters: project, name, contact).
      drop index events_project_created_index;
      drop index events_project_name_created_index;
      drop index events_contact_created_index;
      create index events_project_seq_index on events (project_id, seq);
      create index events_project_name_seq_index on events (project_id, name, seq);
      create index events_contact_seq_index on events (contact_id, seq);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index events_contact_seq_index;
      drop index events_project_name_seq_index;
      drop index events_project_seq_index;
      create index events_project_created_index on events (project_id, created_at, id);
      create index events_project_name_created_index on events (project_id, name, created_at);
      create index events_contact_created_index on events (contact_id, created_at);
      alter table events drop column seq;
      alter table events alter column created_at set default now();
    `);
  }
}
