import { Migration } from '@mikro-orm/migrations';

/** Accounts, projects and keys, members, idempotency keys, rate-limit windows, the local outbox. */
export class Migration20261122000000Foundation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table users (
        id uuid primary key default gen_random_uuid(),
        email text not null,
        password_hash text not null,
        email_verified_at timestamptz,
        session_epoch integer not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        constraint users_email_unique unique (email)
      );

      create table user_tokens (
        id uuid primary key default gen_random_uuid(),
        user_id uuid not null references users (id) on delete cascade,
        purpose text not null check (purpose in ('VERIFY_EMAIL', 'RESET_PASSWORD')),
        token_hash text not null,
        expires_at timestamptz not null,
        used_at timestamptz,
        created_at timestamptz not null default now(),
        constraint user_tokens_token_hash_unique unique (token_hash)
      );
      create index user_tokens_user_id_index on user_tokens (user_id);

      create table projects (
        id uuid primary key default gen_random_uuid(),
        name text not null,
        public_key text not null,
        secret_key_hash text not null,
        secret_key_hint text not null,
        keys_rotated_at timestamptz,
        disabled boolean not null default false,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        constraint projects_public_key_unique unique (public_key),
        constraint projects_secret_key_hash_unique unique (secret_key_hash)
      );

      create table project_members (
        project_id uuid not null references projects (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        role text not null check (role in ('OWNER', 'ADMIN', 'MEMBER')),
        created_at timestamptz not null default now(),
        primary key (project_id, user_id)
      );
      create index project_members_user_id_index on project_members (user_id);

      create table idempotency_keys (
        project_id uuid not null references projects (id) on delete cascade,
        key text not null,
        request text not null,
        status_code integer,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        primary key (project_id, key)
      );
      create index idempotency_keys_expires_at_index on idempotency_keys (expires_at);

      -- Counters are disposable: unlogged skips the WAL (and its fsync) on the hottest write.
      create unlogged table rate_limit_windows (
        project_id uuid not null,
        window_start timestamptz not null,
        count integer not null,
        primary key (project_id, window_start)
      );

      create table outbox_messages (
        id uuid primary key default gen_random_uuid(),
        project_id uuid references projects (id) on delete cascade,
        message_id text not null,
        from_address text not null,
        to_addresses text[] not null,
        subject text not null,
        raw bytea not null,
        size integer not null,
        created_at timestamptz not null default now()
      );
      create index outbox_messages_project_created_index on outbox_messages (project_id, created_at desc, id desc);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop table if exists outbox_messages;
      drop table if exists rate_limit_windows;
      drop table if exists idempotency_keys;
      drop table if exists project_members;
      drop table if exists projects;
      drop table if exists user_tokens;
      drop table if exists users;
    `);
  }
}
