import { Migration } from '@mikro-orm/migrations';

/**
 * CSV uploads are stored as they stream in, in chunks of at most 256 KB, instead of as one bytea
 * the API had to hold whole. An upload is written before its job exists (its job_id is set in
 * the transaction that creates the job, once the file proved valid), so job_uploads gets its own
 * id. Uploads already stored become a single chunk each, so imports queued before the upgrade
 * still run.
 */
export class Migration20261123040000StreamedUploads extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table job_uploads drop constraint job_uploads_pkey;
      alter table job_uploads add column id uuid not null default gen_random_uuid() primary key;
      alter table job_uploads alter column job_id drop not null;
      create unique index job_uploads_job_index on job_uploads (job_id);
      -- Uploads no job claimed (the API stopped mid-upload) are found by age and removed.
      create index job_uploads_unclaimed_index on job_uploads (created_at) where job_id is null;

      create table job_upload_chunks (
        upload_id uuid not null references job_uploads (id) on delete cascade,
        seq integer not null,
        bytes bytea not null,
        primary key (upload_id, seq)
      );
      insert into job_upload_chunks (upload_id, seq, bytes) select id, 0, content from job_uploads;
      alter table job_uploads drop column content;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      delete from job_uploads where job_id is null;
      alter table job_uploads add column content bytea;
      update job_uploads u set content = (select string_agg(c.bytes, ''::bytea order by c.seq) from job_upload_chunks c where c.upload_id = u.id);
      update job_uploads set content = ''::bytea where content is null;
      alter table job_uploads alter column content set not null;
      drop table job_upload_chunks;
      drop index job_uploads_unclaimed_index;
      drop index job_uploads_job_index;
      alter table job_uploads drop constraint job_uploads_pkey;
      alter table job_uploads drop column id;
      alter table job_uploads alter column job_id set not null;
      alter table job_uploads add primary key (job_id);
    `);
  }
}
