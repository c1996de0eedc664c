import { Migration } from '@mikro-orm/migrations';

/**
 * Sharded rollup counters (issue 21): every rollup table of Migration20261123140000AnalyticsRollups
 * gets a `shard` column at the end of its primary key, and the triggers add each transaction's
 * deltas to the shard `analytics_shard()` picks for it. Before, a campaign's counter was one row
 * that every open, click and send wave of the campaign updated, and its project's hourly row
 * likewise: concurrent transactions queued on those row locks until each one committed. Now
 * concurrent writers mostly hold different rows, and readers sum the shards (every read already
 * sums: each bucket is summed over rows; campaign counts are summed per campaign).
 *
 * The shard is the lowest one no other running transaction holds: the first call in a transaction
 * takes a transaction-scoped advisory lock on a free shard number (pg_try_advisory_xact_lock, so it
 * never waits) and keeps the number in a transaction-local setting for its later statements. So
 * up to SHARDS concurrent writers never meet on a counter row, one transaction writes one row per
 * counter key whatever the number of its statements (a send wave of 100 emails is still one
 * counter write per key), and a quiet project keeps writing shard 0: readers sum as many rows per
 * key as there were writers at once, not SHARDS. Were all SHARDS taken, a transaction shares one
 * (its id modulo SHARDS) and waits on its row as before. Counts stay exact: each delta is added
 * once, in the transaction that makes the change, to one row; no fold, no lag.
 *
 * Existing counts stay where they are, in shard 0. Rows are still written in key order (the shard
 * being the key's last column) so two statements never lock counter rows in opposite orders.
 *
 * The delta definitions below are those of the AnalyticsRollups migration, unchanged: a migration
 * is a snapshot of the schema it makes, so this one states the functions it installs in full.
 */

const SHARDS = 64;
/** The advisory lock class of shard numbers (the shard is the second key). */
const SHARD_LOCK_CLASS = 212025;

const METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'] as const;

/** Tables, their key columns before this migration. */
const ROLLUPS = {
  analytics_email_hourly: ['project_id', 'bucket', 'source'],
  analytics_email_daily: ['project_id', 'bucket', 'source'],
  analytics_campaign_counts: ['campaign_id'],
  analytics_event_hourly: ['project_id', 'bucket', 'name'],
  analytics_event_daily: ['project_id', 'bucket', 'name'],
  analytics_workflow_hourly: ['project_id', 'bucket'],
  analytics_workflow_daily: ['project_id', 'bucket'],
} as const;

/** The shard column and value of a write, or nothing (the unsharded functions of `down`). */
interface Sharding {
  column: string;
  value: string;
  key: string;
}
const SHARDED: Sharding = { column: ', shard', value: ', analytics_shard()', key: ', shard' };
const UNSHARDED: Sharding = { column: '', value: '', key: '' };

const reached = (r: string) => ({
  sent: `(${r}.sent_at is not null)::int`,
  delivered: `(coalesce(${r}.delivered_at, ${r}.opened_at, ${r}.clicked_at) is not null)::int`,
  opened: `(${r}.opened_at is not null)::int`,
  clicked: `(${r}.clicked_at is not null)::int`,
  bounced: `(${r}.bounced_at is not null)::int`,
  complained: `(${r}.complained_at is not null)::int`,
});

const COUNTED = (r: string) => `not (${r}.source = 'CAMPAIGN' and ${r}.campaign_id is null)`;

function upsertDeltas(deltas: string, s: Sharding): string {
  const sums = METRICS.map((m) => `sum(${m})`).join(', ');
  const nonZero = METRICS.map((m) => `sum(${m}) <> 0`).join(' or ');
  const add = (table: string) => METRICS.map((m) => `${m} = ${table}.${m} + excluded.${m}`).join(', ');
  return `
    with d as (${deltas}),
    hourly as (
      insert into analytics_email_hourly (project_id, bucket, source${s.column}, ${METRICS.join(', ')})
      select project_id, bucket, source${s.value}, ${sums} from d
      group by project_id, bucket, source having ${nonZero}
      order by project_id, bucket, source
      on conflict (project_id, bucket, source${s.key}) do update set ${add('analytics_email_hourly')}
    ),
    daily as (
      insert into analytics_email_daily (project_id, bucket, source${s.column}, ${METRICS.join(', ')})
      select project_id, date_trunc('day', bucket, 'UTC'), source${s.value}, ${sums} from d
      group by project_id, date_trunc('day', bucket, 'UTC'), source having ${nonZero}
      order by 1, 2, 3
      on conflict (project_id, bucket, source${s.key}) do update set ${add('analytics_email_daily')}
    )
    insert into analytics_campaign_counts (campaign_id, project_id${s.column}, ${METRICS.join(', ')})
      select campaign_id, project_id${s.value}, ${sums} from d where campaign_id is not null
      group by campaign_id, project_id having ${nonZero}
      order by campaign_id
      on conflict (campaign_id${s.key}) do update set ${add('analytics_campaign_counts')}`;
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

/** The trigger functions, with or without the shard. */
function triggerFunctions(s: Sharding): string {
  return `
    create or replace function analytics_count_inserted_emails() returns trigger language plpgsql as $fn$
    begin
      ${upsertDeltas(INSERT_DELTAS, s)};
      return null;
    end $fn$;
    create or replace function analytics_count_updated_emails() returns trigger language plpgsql as $fn$
    begin
      ${upsertDeltas(UPDATE_DELTAS, s)};
      return null;
    end $fn$;
    create or replace function analytics_count_inserted_events() returns trigger language plpgsql as $fn$
    begin
      insert into analytics_event_hourly as h (project_id, bucket, name${s.column}, count)
        select project_id, date_trunc('hour', created_at, 'UTC'), name${s.value}, count(*) from new_rows
        group by 1, 2, 3 order by 1, 2, 3
        on conflict (project_id, bucket, name${s.key}) do update set count = h.count + excluded.count;
      insert into analytics_event_daily as h (project_id, bucket, name${s.column}, count)
        select project_id, date_trunc('day', created_at, 'UTC'), name${s.value}, count(*) from new_rows
        group by 1, 2, 3 order by 1, 2, 3
        on conflict (project_id, bucket, name${s.key}) do update set count = h.count + excluded.count;
      if exists (select 1 from new_rows where name = 'contact.unsubscribed') then
        ${upsertDeltas(UNSUBSCRIBE_DELTAS, s)};
      end if;
      return null;
    end $fn$;
    create or replace function analytics_count_started_executions() returns trigger language plpgsql as $fn$
    begin
      insert into analytics_workflow_hourly as h (project_id, bucket${s.column}, started)
        select project_id, date_trunc('hour', started_at, 'UTC')${s.value}, count(*) from new_rows
        group by 1, 2 order by 1, 2
        on conflict (project_id, bucket${s.key}) do update set started = h.started + excluded.started;
      insert into analytics_workflow_daily as h (project_id, bucket${s.column}, started)
        select project_id, date_trunc('day', started_at, 'UTC')${s.value}, count(*) from new_rows
        group by 1, 2 order by 1, 2
        on conflict (project_id, bucket${s.key}) do update set started = h.started + excluded.started;
      return null;
    end $fn$;`;
}

export class Migration20261125010000ShardedRollups extends Migration {
  override async up(): Promise<void> {
    const tables = Object.entries(ROLLUPS).map(
      ([table, key]) => `
      alter table ${table} add column shard smallint not null default 0 check (shard >= 0 and shard < ${SHARDS}),
        drop constraint ${table}_pkey, add primary key (${key.join(', ')}, shard);`,
    );
    this.addSql(`
      -- The counter shard of the current transaction (see above).
      create function analytics_shard() returns smallint language plpgsql volatile as $fn$
      declare
        taken text := current_setting('mailroom.analytics_shard', true);
        s int;
      begin
        if taken <> '' then
          return taken::smallint;
        end if;
        for s in 0 .. ${SHARDS - 1} loop
          if pg_try_advisory_xact_lock(${SHARD_LOCK_CLASS}, s) then
            perform set_config('mailroom.analytics_shard', s::text, true);
            return s;
          end if;
        end loop;
        s := pg_current_xact_id()::text::bigint % ${SHARDS};
        perform set_config('mailroom.analytics_shard', s::text, true);
        return s;
      end $fn$;
      ${tables.join('\n')}
      ${triggerFunctions(SHARDED)}
    `);
  }

  override async down(): Promise<void> {
    const tables = Object.entries(ROLLUPS).map(([table, key]) => {
      const counts =
        table.startsWith('analytics_email') || table === 'analytics_campaign_counts' ? METRICS : table.startsWith('analytics_event') ? ['count'] : ['started'];
      const rest = table === 'analytics_campaign_counts' ? ['project_id'] : [];
      const columns = [...key, ...rest];
      return `
      create temporary table folded as
        select ${columns.join(', ')}, ${counts.map((c) => `sum(${c}) as ${c}`).join(', ')} from ${table} group by ${columns.join(', ')};
      delete from ${table};
      alter table ${table} drop constraint ${table}_pkey, drop column shard, add primary key (${key.join(', ')});
      insert into ${table} (${columns.join(', ')}, ${counts.join(', ')}) select * from folded;
      drop table folded;`;
    });
    this.addSql(`
      ${triggerFunctions(UNSHARDED)}
      ${tables.join('\n')}
      drop function analytics_shard();
    `);
  }
}
