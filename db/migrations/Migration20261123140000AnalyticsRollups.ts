import { Migration } from '@mikro-orm/migrations';

/**
 * Rollups for activity and analytics (contract section 15): counters kept by PostgreSQL triggers
 * in the same transaction as the change they count, whichever code path makes it (send, delivery,
 * SNS feedback, tracking links, campaign sends, subscription pages, imports). The triggers are
 * statement-level with transition tables: one aggregated upsert per statement, so a delivery
 * batch of 100 emails or a batched /v1/track statement of 250 events is one counter write per
 * counter row, and concurrent writers meet on few rows for a short time.
 *
 * What counts (one definition, shared with the campaign counts of db/campaigns):
 * - An email is counted in the hour (UTC) it was created, its cohort, for its whole life: an open
 *   a week later adds to the hour the email was sent in, so every bucket's rates stay ≤ 100 %.
 * - sent = `sent_at` set; delivered = `delivered_at`, `opened_at` or `clicked_at` set (an opened
 *   mail evidently arrived); opened / clicked / bounced / complained = the first-time column set,
 *   so each email counts at most once per metric whatever the number of hits.
 * - unsubscribed = a `contact.unsubscribed` event, attributed to the latest email the contact had
 *   been sent by then (one email, so totals over campaigns do not count it twice).
 * - Campaign test copies (source CAMPAIGN without a campaign id) count nowhere.
 * - Event counts: every event, per hour (UTC) and name. Workflow starts: per hour.
 * - Each hourly table has a daily twin (UTC days) written by the same trigger, so long ranges read
 *   a row per day, and only the edge days by the hour.
 * - Deleting records (a contact with its emails and events) does not take counts back: the
 *   rollups say what happened, like a sent-mail log.
 */

const METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'] as const;

/** 1 when the email row `r` has reached the metric. */
const reached = (r: string) => ({
  sent: `(${r}.sent_at is not null)::int`,
  delivered: `(coalesce(${r}.delivered_at, ${r}.opened_at, ${r}.clicked_at) is not null)::int`,
  opened: `(${r}.opened_at is not null)::int`,
  clicked: `(${r}.clicked_at is not null)::int`,
  bounced: `(${r}.bounced_at is not null)::int`,
  complained: `(${r}.complained_at is not null)::int`,
});

const COUNTED = (r: string) => `not (${r}.source = 'CAMPAIGN' and ${r}.campaign_id is null)`;

/**
 * Adds the per-email deltas of `deltas` (project_id, source, campaign_id, bucket, <metrics>) to
 * the hourly, daily and per-campaign rollups. Rows are grouped and written in key order, so two statements never lock counter
 * rows in opposite orders.
 */
function upsertDeltas(deltas: string): string {
  const sums = METRICS.map((m) => `sum(${m})`).join(', ');
  const nonZero = METRICS.map((m) => `sum(${m}) <> 0`).join(' or ');
  const add = (table: string) => METRICS.map((m) => `${m} = ${table}.${m} + excluded.${m}`).join(', ');
  return `
    with d as (${deltas}),
    hourly as (
      insert into analytics_email_hourly (project_id, bucket, source, ${METRICS.join(', ')})
      select project_id, bucket, source, ${sums} from d
      group by project_id, bucket, source having ${nonZero}
      order by project_id, bucket, source
      on conflict (project_id, bucket, source) do update set ${add('analytics_email_hourly')}
    ),
    daily as (
      insert into analytics_email_daily (project_id, bucket, source, ${METRICS.join(', ')})
      select project_id, date_trunc('day', bucket, 'UTC'), source, ${sums} from d
      group by project_id, date_trunc('day', bucket, 'UTC'), source having ${nonZero}
      order by 1, 2, 3
      on conflict (project_id, bucket, source) do update set ${add('analytics_email_daily')}
    )
    insert into analytics_campaign_counts (campaign_id, project_id, ${METRICS.join(', ')})
      select campaign_id, project_id, ${sums} from d where campaign_id is not null
      group by campaign_id, project_id having ${nonZero}
      order by campaign_id
      on conflict (campaign_id) do update set ${add('analytics_campaign_counts')}`;
}

const deltaColumns = (expr: (metric: (typeof METRICS)[number]) => string) => METRICS.map((m) => `${expr(m)} as ${m}`).join(', ');

const INSERT_DELTAS = `
  select n.project_id, n.source, n.campaign_id, date_trunc('hour', n.created_at, 'UTC') as bucket,
         ${deltaColumns((m) => (m === 'unsubscribed' ? '0' : reached('n')[m]))}
  from new_rows n where ${COUNTED('n')}`;

const UPDATE_DELTAS = `
  select n.project_id, n.source, n.campaign_id, date_trunc('hour', n.created_at, 'UTC') as bucket,
         ${deltaColumns((m) => (m === 'unsubscribed' ? '0' : `${reached('n')[m]} - ${reached('o')[m]}`))}
  from new_rows n join old_rows o on o.id = n.id
  where ${COUNTED('n')}
    and (n.sent_at, n.delivered_at, n.opened_at, n.clicked_at, n.bounced_at, n.complained_at)
        is distinct from (o.sent_at, o.delivered_at, o.opened_at, o.clicked_at, o.bounced_at, o.complained_at)`;

/** The email each new contact.unsubscribed event is attributed to: the contact's latest sent one. */
const UNSUBSCRIBE_DELTAS = `
  select e.project_id, e.source, e.campaign_id, date_trunc('hour', e.created_at, 'UTC') as bucket,
         ${deltaColumns((m) => (m === 'unsubscribed' ? '1' : '0'))}
  from new_rows ev
  cross join lateral (
    select em.project_id, em.source, em.campaign_id, em.created_at from emails em
    where em.contact_id = ev.contact_id and em.sent_at <= ev.created_at and ${COUNTED('em')}
    order by em.created_at desc, em.id desc limit 1
  ) e
  where ev.name = 'contact.unsubscribed' and ev.contact_id is not null`;

export class Migration20261123140000AnalyticsRollups extends Migration {
  override async up(): Promise<void> {
    const metricColumns = METRICS.map((m) => `${m} bigint not null default 0`).join(',\n        ');
    this.addSql(`
      create table analytics_email_hourly (
        project_id uuid not null references projects (id) on delete cascade,
        bucket timestamptz not null,
        source text not null check (source in ('TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW')),
        ${metricColumns},
        primary key (project_id, bucket, source)
      );

      -- The same by UTC day: a year is read as 365 days plus the hours of the two edge days.
      create table analytics_email_daily (like analytics_email_hourly including all);
      alter table analytics_email_daily add foreign key (project_id) references projects (id) on delete cascade;

      -- No foreign key to campaigns: a deleted campaign's row is simply never joined again.
      create table analytics_campaign_counts (
        campaign_id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        ${metricColumns}
      );
      create index analytics_campaign_counts_project_index on analytics_campaign_counts (project_id);

      create table analytics_event_hourly (
        project_id uuid not null references projects (id) on delete cascade,
        bucket timestamptz not null,
        name text not null,
        count bigint not null default 0,
        primary key (project_id, bucket, name)
      );

      create table analytics_event_daily (like analytics_event_hourly including all);
      alter table analytics_event_daily add foreign key (project_id) references projects (id) on delete cascade;

      create table analytics_workflow_hourly (
        project_id uuid not null references projects (id) on delete cascade,
        bucket timestamptz not null,
        started bigint not null default 0,
        primary key (project_id, bucket)
      );
      create table analytics_workflow_daily (like analytics_workflow_hourly including all);
      alter table analytics_workflow_daily add foreign key (project_id) references projects (id) on delete cascade;

      -- Backfill from what exists, with the same definitions the triggers apply.
      ${upsertDeltas(INSERT_DELTAS.replace(/new_rows/g, 'emails'))};
      ${upsertDeltas(UNSUBSCRIBE_DELTAS.replace(/new_rows/g, 'events'))};
      insert into analytics_event_hourly (project_id, bucket, name, count)
        select project_id, date_trunc('hour', created_at, 'UTC'), name, count(*) from events group by 1, 2, 3;
      insert into analytics_workflow_hourly (project_id, bucket, started)
        select project_id, date_trunc('hour', started_at, 'UTC'), count(*) from workflow_executions group by 1, 2;
      insert into analytics_event_daily (project_id, bucket, name, count)
        select project_id, date_trunc('day', bucket, 'UTC'), name, sum(count) from analytics_event_hourly group by 1, 2, 3;
      insert into analytics_workflow_daily (project_id, bucket, started)
        select project_id, date_trunc('day', bucket, 'UTC'), sum(started) from analytics_workflow_hourly group by 1, 2;

      create function analytics_count_inserted_emails() returns trigger language plpgsql as $fn$
      begin
        ${upsertDeltas(INSERT_DELTAS)};
        return null;
      end $fn$;
      create function analytics_count_updated_emails() returns trigger language plpgsql as $fn$
      begin
        ${upsertDeltas(UPDATE_DELTAS)};
        return null;
      end $fn$;
      create trigger analytics_emails_inserted after insert on emails
        referencing new table as new_rows for each statement execute function analytics_count_inserted_emails();
      create trigger analytics_emails_updated after update on emails
        referencing old table as old_rows new table as new_rows for each statement execute function analytics_count_updated_emails();

      create function analytics_count_inserted_events() returns trigger language plpgsql as $fn$
      begin
        insert into analytics_event_hourly as h (project_id, bucket, name, count)
          select project_id, date_trunc('hour', created_at, 'UTC'), name, count(*) from new_rows
          group by 1, 2, 3 order by 1, 2, 3
          on conflict (project_id, bucket, name) do update set count = h.count + excluded.count;
        insert into analytics_event_daily as h (project_id, bucket, name, count)
          select project_id, date_trunc('day', created_at, 'UTC'), name, count(*) from new_rows
          group by 1, 2, 3 order by 1, 2, 3
          on conflict (project_id, bucket, name) do update set count = h.count + excluded.count;
        if exists (select 1 from new_rows where name = 'contact.unsubscribed') then
          ${upsertDeltas(UNSUBSCRIBE_DELTAS)};
        end if;
        return null;
      end $fn$;
      create trigger analytics_events_inserted after insert on events
        referencing new table as new_rows for each statement execute function analytics_count_inserted_events();

      create function analytics_count_started_executions() returns trigger language plpgsql as $fn$
      begin
        insert into analytics_workflow_hourly as h (project_id, bucket, started)
          select project_id, date_trunc('hour', started_at, 'UTC'), count(*) from new_rows
          group by 1, 2 order by 1, 2
          on conflict (project_id, bucket) do update set started = h.started + excluded.started;
        insert into analytics_workflow_daily as h (project_id, bucket, started)
          select project_id, date_trunc('day', started_at, 'UTC'), count(*) from new_rows
          group by 1, 2 order by 1, 2
          on conflict (project_id, bucket) do update set started = h.started + excluded.started;
        return null;
      end $fn$;
      create trigger analytics_executions_inserted after insert on workflow_executions
        referencing new table as new_rows for each statement execute function analytics_count_started_executions();

      -- The activity feed reads each source newest first by its own time.
      create index events_project_created_index on events (project_id, created_at, id);
      create index emails_project_suppressed_index on emails (project_id, created_at, id) where status = 'SUPPRESSED';
      create index workflow_executions_project_completed_index on workflow_executions (project_id, completed_at, id) where status = 'COMPLETED';
      create index campaigns_project_sent_index on campaigns (project_id, sent_at, id) where sent_at is not null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists campaigns_project_sent_index;
      drop index if exists workflow_executions_project_completed_index;
      drop index if exists emails_project_suppressed_index;
      drop index if exists events_project_created_index;
      drop trigger if exists analytics_executions_inserted on workflow_executions;
      drop trigger if exists analytics_events_inserted on events;
      drop trigger if exists analytics_emails_updated on emails;
      drop trigger if exists analytics_emails_inserted on emails;
      drop function if exists analytics_count_started_executions();
      drop function if exists analytics_count_inserted_events();
      drop function if exists analytics_count_updated_emails();
      drop function if exists analytics_count_inserted_emails();
      drop table if exists analytics_workflow_daily;
      drop table if exists analytics_event_daily;
      drop table if exists analytics_email_daily;
      drop table if exists analytics_workflow_hourly;
      drop table if exists analytics_event_hourly;
      drop table if exists analytics_campaign_counts;
      drop table if exists analytics_email_hourly;
    `);
  }
}
