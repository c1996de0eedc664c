import { Migration } from '@mikro-orm/migrations';

/** Contacts, events, and the import / bulk job records (with the uploaded CSV). */
export class Migration20261122010000ContactsEvents extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create extension if not exists pg_trgm;
      create extension if not exists btree_gin;

      -- The data limits of contract section 5, enforced by the database so that no write path
      -- (API, import, workflow step) can store more: at most 100 top-level keys and 64 KB.
      create function mailroom_contact_data_ok(data jsonb) returns boolean
        language sql immutable parallel safe as $$
          select jsonb_typeof(data) = 'object'
             and octet_length(data::text) <= 65536
             and (select count(*) from jsonb_object_keys(data)) <= 100
        $$;

      create table contacts (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        email text not null,
        subscribed boolean not null default true,
        data jsonb not null default '{}'::jsonb,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        constraint contacts_project_email_unique unique (project_id, email),
        constraint contacts_data_limits check (mailroom_contact_data_ok(data))
      );
      -- Keyset pages in either direction of createdAt.
      create index contacts_project_created_index on contacts (project_id, created_at, id);
      -- Case-insensitive substring search on email within a project: trigram GIN, keyed by project
      -- (btree_gin) so one index scan answers "this project's contacts whose email contains X".
      create index contacts_project_email_trgm_index on contacts using gin (project_id, email gin_trgm_ops);

      create table events (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        contact_id uuid references contacts (id) on delete cascade,
        name text not null,
        data jsonb,
        source text not null default 'API' check (source in ('API', 'SYSTEM')),
        email_id uuid,
        created_at timestamptz not null default now()
      );
      create index events_project_created_index on events (project_id, created_at, id);
      create index events_project_name_created_index on events (project_id, name, created_at);
      create index events_contact_created_index on events (contact_id, created_at);

      create table jobs (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        type text not null check (type in ('IMPORT', 'BULK_SUBSCRIBE', 'BULK_UNSUBSCRIBE', 'BULK_DELETE')),
        status text not null default 'QUEUED' check (status in ('QUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
        total integer not null default 0,
        processed integer not null default 0,
        succeeded integer not null default 0,
        failed integer not null default 0,
        errors jsonb not null default '[]'::jsonb,
        -- Bulk jobs: the contact ids to act on (at most 1,000). Imports: the options given.
        input jsonb not null default '{}'::jsonb,
        error text,
        created_at timestamptz not null default now(),
        started_at timestamptz,
        completed_at timestamptz
      );
      create index jobs_project_created_index on jobs (project_id, created_at);

      -- The uploaded CSV, kept with the job so any worker on any host can read it.
      create table job_uploads (
        job_id uuid primary key references jobs (id) on delete cascade,
        project_id uuid not null references projects (id) on delete cascade,
        filename text,
        content bytea not null,
        created_at timestamptz not null default now()
      );
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop table if exists job_uploads;
      drop table if exists jobs;
      drop table if exists events;
      drop table if exists contacts;
      drop function if exists mailroom_contact_data_ok(jsonb);
    `);
  }
}
