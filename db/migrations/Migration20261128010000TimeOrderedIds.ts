import { Migration } from '@mikro-orm/migrations';

/**
 * Time-ordered ids for new events (issue 39, item 4): a UUIDv7 (RFC 9562) puts the time in its
 * first 48 bits, so `events_pkey` grows at its right edge like the time indexes beside it instead
 * of taking each insert into a random leaf. Most events get their id from this default (every
 * `insert into events` in db/ leaves it out); emails get theirs from the code
 * (`lib/ids/timeOrderedId.ts`, the same layout). PostgreSQL 15 has no uuidv7() (18 does) and no
 * extension is needed for it: the random bits of gen_random_uuid() with the millisecond time laid
 * over the first six bytes and the version nibble turned from 4 into 7 (bits 52 and 53; the
 * variant bits are already RFC 9562's). Rows written before keep their v4 ids: nothing reads an
 * id's bits, so the two kinds live side by side.
 */
export class Migration20261128010000TimeOrderedIds extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create function mailroom_uuid_v7() returns uuid language sql volatile parallel safe as $fn$
        select encode(
          set_bit(
            set_bit(
              overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
                from 1 for 6),
              52, 1),
            53, 1),
          'hex')::uuid
      $fn$;
      alter table events alter column id set default mailroom_uuid_v7();
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table events alter column id set default gen_random_uuid();
      drop function if exists mailroom_uuid_v7();
    `);
  }
}
