import { Migration } from '@mikro-orm/migrations';

/**
 * Mail in (contract 20). `inbound_messages` holds each message the inbound listener accepted,
 * raw, committed before the 250 to DATA, with its envelope (MAIL FROM, the recipients and the
 * projects each one reaches, the client's address and HELO); processing marks it PROCESSED.
 * A project's copy is an email record (source INBOUND, status RECEIVED) naming the message, at
 * most one per (message, project, recipient): a retried processing activity records nothing twice.
 * The listener finds the projects of a recipient's domain by name among verified domains.
 */
export class Migration20261125110000InboundMail extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table inbound_messages (
        id uuid primary key,
        received_at timestamptz not null default now(),
        -- Null once retention removed the content; the records stay.
        raw bytea,
        size int not null,
        envelope jsonb not null,
        status text not null default 'RECEIVED' check (status in ('RECEIVED', 'PROCESSED')),
        workflow_id text,
        processed_at timestamptz
      );
      -- The sweep finds accepted messages whose processing never started.
      create index inbound_messages_unprocessed_index on inbound_messages (received_at) where status = 'RECEIVED';
      create index inbound_messages_retention_index on inbound_messages (received_at) where raw is not null;

      alter table emails drop constraint emails_source_check;
      alter table emails add constraint emails_source_check check (source in ('TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW', 'INBOUND'));
      alter table emails drop constraint emails_status_check;
      alter table emails add constraint emails_status_check
        check (status in ('QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED', 'FAILED', 'SUPPRESSED', 'RECEIVED'));
      alter table emails add column inbound_message_id uuid references inbound_messages (id) on delete set null;
      -- SPF, DKIM and DMARC verdicts of a received message.
      alter table emails add column auth jsonb;
      create unique index emails_inbound_copy_unique on emails (inbound_message_id, project_id, lower(to_address)) where inbound_message_id is not null;

      create index domains_verified_name_index on domains (domain) where status = 'VERIFIED';
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists domains_verified_name_index;
      delete from emails where source = 'INBOUND';
      alter table emails drop column if exists auth;
      alter table emails drop column if exists inbound_message_id;
      alter table emails drop constraint emails_status_check;
      alter table emails add constraint emails_status_check
        check (status in ('QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED', 'FAILED', 'SUPPRESSED'));
      alter table emails drop constraint emails_source_check;
      alter table emails add constraint emails_source_check check (source in ('TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW'));
      drop table if exists inbound_messages;
    `);
  }
}
