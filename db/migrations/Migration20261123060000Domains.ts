import { Migration } from '@mikro-orm/migrations';

/**
 * Sender domains (contract section 8): one row per domain of a project, with its DKIM key
 * (the private half sealed with SECRET) and what the last completed DNS check found.
 */
export class Migration20261123060000Domains extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table domains (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        domain text not null check (domain = lower(domain) and length(domain) between 3 and 253 and domain not like '%.'),
        status text not null default 'PENDING' check (status in ('PENDING', 'VERIFIED', 'FAILED')),
        dkim_selector text not null check (dkim_selector ~ '^[a-z0-9-]{1,63}$'),
        dkim_public_key text not null,
        dkim_private_key_sealed text not null check (dkim_private_key_sealed like 'v1.%'),
        dkim_verified boolean not null default false,
        spf_verified boolean not null default false,
        dmarc_verified boolean not null default false,
        last_checked_at timestamptz,
        verified_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        constraint domains_project_domain_unique unique (project_id, domain),
        constraint domains_verified_at_check check ((status = 'VERIFIED') = (verified_at is not null))
      );
      -- The sender-domain rule looks up a project's verified domains by name.
      create index domains_project_verified_index on domains (project_id, domain) where status = 'VERIFIED';
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists domains;`);
  }
}
