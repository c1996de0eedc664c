import { Migration } from '@mikro-orm/migrations';

/**
 * The send pipeline (contract sections 7 and 9): templates, the email record of every message
 * Mailroom accepts, the attachments a send carries (stored once per request, shared by its
 * recipients), and the suppression list that bounces and complaints write.
 */
export class Migration20261123070000SendPipeline extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table templates (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        name text not null,
        description text,
        subject text not null,
        body text not null,
        from_address text not null,
        from_name text,
        reply_to text,
        type text not null default 'MARKETING' check (type in ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index templates_project_created_index on templates (project_id, created_at, id);

      -- One row per send request that carried attachments; its emails point at it.
      create table email_attachment_sets (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        created_at timestamptz not null default now()
      );
      create table email_attachments (
        set_id uuid not null references email_attachment_sets (id) on delete cascade,
        position int not null,
        filename text not null,
        content_type text,
        content_id text,
        disposition text not null default 'attachment' check (disposition in ('attachment', 'inline')),
        content bytea not null,
        primary key (set_id, position)
      );

      create table emails (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        contact_id uuid references contacts (id) on delete cascade,
        template_id uuid references templates (id) on delete set null,
        campaign_id uuid,
        workflow_execution_id uuid,
        source text not null check (source in ('TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW')),
        -- The template type the mail was sent as: MARKETING mail honours unsubscribes.
        type text not null default 'TRANSACTIONAL' check (type in ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
        subject text not null,
        from_address text not null,
        from_name text,
        reply_to text,
        to_address text not null,
        to_name text,
        html text,
        text text,
        headers jsonb,
        attachment_set_id uuid references email_attachment_sets (id) on delete set null,
        status text not null default 'QUEUED' check (status in ('QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED', 'FAILED', 'SUPPRESSED')),
        message_id text not null,
        -- What the relay answered (SES puts its own message id there).
        provider_message_id text,
        error text,
        attempts int not null default 0,
        -- The delivery workflow that owns the email, and the activity holding it while SENDING.
        delivery_workflow_id text,
        claimed_by text,
        claimed_until timestamptz,
        sent_at timestamptz,
        delivered_at timestamptz,
        opened_at timestamptz,
        clicked_at timestamptz,
        bounced_at timestamptz,
        complained_at timestamptz,
        opens int not null default 0,
        clicks int not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index emails_project_created_index on emails (project_id, created_at, id);
      create index emails_contact_created_index on emails (contact_id, created_at);
      create index emails_message_id_index on emails (message_id);
      create index emails_provider_message_id_index on emails (provider_message_id) where provider_message_id is not null;
      -- The sweeper looks for accepted mail that no delivery has touched.
      create index emails_unattempted_index on emails (created_at) where status = 'QUEUED' and attempts = 0;
      -- A campaign mails each contact at most once.
      create unique index emails_campaign_contact_unique on emails (campaign_id, contact_id) where campaign_id is not null;

      create table email_suppressions (
        project_id uuid not null references projects (id) on delete cascade,
        email text not null,
        reason text not null check (reason in ('BOUNCE', 'COMPLAINT')),
        email_id uuid,
        detail text,
        created_at timestamptz not null default now(),
        primary key (project_id, email)
      );
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop table if exists email_suppressions;
      drop table if exists emails;
      drop table if exists email_attachments;
      drop table if exists email_attachment_sets;
      drop table if exists templates;
    `);
  }
}
