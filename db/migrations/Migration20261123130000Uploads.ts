import { Migration } from '@mikro-orm/migrations';

/**
 * Images uploaded for template bodies (POST /uploads/image). The bytes live in the object store
 * (DATA_DIR/uploads or an S3 bucket) under `key`; this row is what makes them servable, so a file
 * whose row is gone is never served even if removing the file failed.
 */
export class Migration20261123130000Uploads extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table uploads (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        key text not null unique,
        content_type text not null check (content_type in ('image/png', 'image/jpeg', 'image/gif', 'image/webp')),
        size integer not null check (size > 0),
        width integer not null check (width > 0),
        height integer not null check (height > 0),
        created_at timestamptz not null default now()
      );
      create index uploads_project_index on uploads (project_id, created_at);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table uploads;`);
  }
}
