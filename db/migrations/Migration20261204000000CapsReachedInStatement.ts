import { Migration } from '@mikro-orm/migrations';

/**
 * `mailroom_caps_reached()` raises SQLSTATE MRCAP. A statement that counts emails against their
 * monthly cap and records them in one go (db/emails/emailRepository.ts `insertManyWithinCap`, a
 * send's round when its cap has room) calls it when the count found no room: the error undoes the
 * whole statement, so nothing is counted or recorded, and the caller records the round in a
 * transaction that tells which send to refuse.
 */
export class Migration20261204000000CapsReachedInStatement extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create or replace function mailroom_caps_reached() returns boolean language plpgsql volatile as $$
      begin
        raise exception 'a monthly cap has no room for these emails' using errcode = 'MRCAP';
      end
      $$;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`drop function if exists mailroom_caps_reached();`);
  }
}
