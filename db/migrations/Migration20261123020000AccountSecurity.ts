import { Migration } from '@mikro-orm/migrations';

/**
 * Account security (issues 11 and 13):
 * - `sessions`: one row per signed-in session; the session cookie names its row, so logout and a
 *   password reset end sessions on the server. It replaces `users.session_epoch`.
 * - `login_failures_by_account_address`: the login throttle's per-(account, client address) counter;
 *   `client_address_attempts`: per-client-address budgets (logins, account-mail requests). Shared by
 *   every API process.
 * - an index for the per-account mail limit, which counts the tokens issued in the last 15 minutes.
 */
export class Migration20261123020000AccountSecurity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table sessions (
        id uuid primary key default gen_random_uuid(),
        user_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null
      );
      create index sessions_user_id_index on sessions (user_id);
      create index sessions_expires_at_index on sessions (expires_at);

      alter table users drop column session_epoch;

      create index user_tokens_user_purpose_created_index on user_tokens (user_id, purpose, created_at);

      create table login_failures_by_account_address (
        email text not null,
        address text not null,
        failures integer not null,
        last_failed_at timestamptz not null,
        primary key (email, address)
      );
      create index login_failures_by_account_address_last_failed_index on login_failures_by_account_address (last_failed_at);

      create table client_address_attempts (
        purpose text not null check (purpose in ('LOGIN', 'ACCOUNT_MAIL')),
        address text not null,
        attempts integer not null,
        window_started_at timestamptz not null,
        primary key (purpose, address)
      );
      create index client_address_attempts_window_index on client_address_attempts (window_started_at);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop table if exists client_address_attempts;
      drop table if exists login_failures_by_account_address;
      drop index if exists user_tokens_user_purpose_created_index;
      alter table users add column session_epoch integer not null default 0;
      drop table if exists sessions;
    `);
  }
}
