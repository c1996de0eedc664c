import { Migration } from '@mikro-orm/migrations';

/**
 * Segments and campaigns (contract sections 10 and 11): segments with their cached count and
 * the member table of static and tracked segments; campaigns, and the audience a campaign fixes
 * when its send starts (one row per recipient, walked by the send workflow in key order).
 */
export class Migration20261123080000SegmentsCampaigns extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table segments (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        name text not null,
        description text,
        -- The name in event names: segment.<slug>.entry / .exit.
        slug text not null,
        type text not null default 'DYNAMIC' check (type in ('DYNAMIC', 'STATIC')),
        condition jsonb,
        track_membership boolean not null default false,
        member_count int not null default 0,
        member_count_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        constraint segments_condition_check check ((type = 'DYNAMIC') = (condition is not null))
      );
      create index segments_project_created_index on segments (project_id, created_at desc, id);

      -- Members of STATIC segments (managed by hand) and of tracked DYNAMIC ones (kept current).
      create table segment_members (
        segment_id uuid not null references segments (id) on delete cascade,
        contact_id uuid not null references contacts (id) on delete cascade,
        created_at timestamptz not null default now(),
        primary key (segment_id, contact_id)
      );
      create index segment_members_contact_index on segment_members (contact_id);

      create table campaigns (
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
        status text not null default 'DRAFT' check (status in ('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED')),
        audience_type text not null check (audience_type in ('ALL', 'SEGMENT', 'FILTERED')),
        segment_id uuid references segments (id) on delete set null,
        audience_condition jsonb,
        scheduled_for timestamptz,
        total_recipients int not null default 0,
        sent_count int not null default 0,
        sent_at timestamptz,
        cancelled_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index campaigns_project_created_index on campaigns (project_id, created_at, id);
      create index campaigns_segment_index on campaigns (segment_id) where segment_id is not null;

      -- The audience fixed when the send starts; the send walks it by contact id.
      create table campaign_recipients (
        campaign_id uuid not null references campaigns (id) on delete cascade,
        contact_id uuid not null,
        primary key (campaign_id, contact_id)
      );

      -- A deleted campaign's emails stay (activity, analytics), no longer tied to it.
      alter table emails add constraint emails_campaign_fk foreign key (campaign_id) references campaigns (id) on delete set null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table emails drop constraint if exists emails_campaign_fk;
      drop table if exists campaign_recipients;
      drop table if exists campaigns;
      drop table if exists segment_members;
      drop table if exists segments;
    `);
  }
}
