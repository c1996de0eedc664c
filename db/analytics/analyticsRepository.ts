import type { EntityManager } from '@mikro-orm/postgresql';
import { CUSTOM_EVENT_NAME_SQL, EMAIL_METRICS, readMetrics, sumMetricsSql, type EmailMetrics } from './emailMetrics';
import type { CampaignStatus } from '../campaigns/campaignRepository';

export type Granularity = 'hour' | 'day';
export type EmailSource = 'TRANSACTIONAL' | 'CAMPAIGN' | 'WORKFLOW';

/**
 * A time range, half-open [start, end). The rollups count by the hour (UTC), so a range covers the
 * whole hours it touches: those starting from the hour of `start` and before `end`.
 */
export interface TimeRange {
  start: Date;
  end: Date;
}

export interface TimeseriesPoint extends EmailMetrics {
  bucket: string;
}

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

/**
 * The rows of a rollup family (`<family>_hourly` and `<family>_daily`) that cover a range: the
 * whole UTC days inside it from the daily table, the hours of the edge days from the hourly one.
 * Hours counted: from the hour `start` falls in, those starting before `end`.
 */
function coveringRows(
  family: 'analytics_email' | 'analytics_event' | 'analytics_workflow',
  columns: string,
  projectId: string,
  range: TimeRange,
  filter = '',
  filterParams: unknown[] = [],
) {
  const hourStart = floorTo(range.start.getTime(), HOUR_MS);
  const hourEnd = ceilTo(range.end.getTime(), HOUR_MS);
  const dayStart = ceilTo(hourStart, DAY_MS);
  const dayEnd = floorTo(hourEnd, DAY_MS);
  const parts: Array<{ table: string; from: number; to: number }> = [];
  if (dayStart < dayEnd) {
    parts.push({ table: `${family}_daily`, from: dayStart, to: dayEnd });
    if (hourStart < dayStart) parts.push({ table: `${family}_hourly`, from: hourStart, to: dayStart });
    if (dayEnd < hourEnd) parts.push({ table: `${family}_hourly`, from: dayEnd, to: hourEnd });
  } else {
    parts.push({ table: `${family}_hourly`, from: hourStart, to: hourEnd });
  }
  return {
    sql: parts.map((p) => `(select ${columns} from ${p.table} where project_id = ? and bucket >= ? and bucket < ? ${filter})`).join(' union all '),
    params: parts.flatMap((p) => [projectId, new Date(p.from), new Date(p.to), ...filterParams]),
  };
}

const METRIC_COLUMNS = `bucket, ${EMAIL_METRICS.join(', ')}`;

/**
 * Campaign `c`'s counts: the sum of its counter shards (Migration20261125010000ShardedRollups),
 * zeros when it has none; read through the primary key (campaign_id, shard).
 */
const CAMPAIGN_COUNTS = `select ${sumMetricsSql('s')} from analytics_campaign_counts s where s.campaign_id = c.id`;

export const analyticsRepository = {
  /** One point per bucket of the range, zeros included, oldest first. */
  async timeseries(em: EntityManager, projectId: string, range: TimeRange, granularity: Granularity, source: EmailSource | null): Promise<TimeseriesPoint[]> {
    const rows =
      granularity === 'day'
        ? coveringRows('analytics_email', METRIC_COLUMNS, projectId, range, source ? 'and source = ?' : '', source ? [source] : [])
        : {
            sql: `select ${METRIC_COLUMNS} from analytics_email_hourly where project_id = ? and bucket >= date_trunc('hour', ?::timestamptz, 'UTC') and bucket < ? ${source ? 'and source = ?' : ''}`,
            params: [projectId, range.start, range.end, ...(source ? [source] : [])],
          };
    const points = await em.execute(
      `with buckets as (
         select generate_series(date_trunc(?, ?::timestamptz, 'UTC'), ?::timestamptz - interval '1 microsecond', make_interval(hours => ?)) as bucket
       ),
       counts as (
         select date_trunc(?, r.bucket, 'UTC') as bucket, ${sumMetricsSql('r')}
         from (${rows.sql}) r group by 1
       )
       select to_char(b.bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as bucket, ${EMAIL_METRICS.map((m) => `coalesce(c.${m}, 0) as ${m}`).join(', ')}
       from buckets b left join counts c on c.bucket = b.bucket
       order by b.bucket`,
      [granularity, range.start, range.end, granularity === 'day' ? 24 : 1, granularity, ...rows.params],
    );
    return points.map((r: Record<string, unknown>) => ({ bucket: String(r.bucket), ...readMetrics(r) }));
  },

  async emailTotals(em: EntityManager, projectId: string, range: TimeRange): Promise<EmailMetrics> {
    const rows = coveringRows('analytics_email', METRIC_COLUMNS, projectId, range);
    const [row] = await em.execute(`select ${sumMetricsSql('r')} from (${rows.sql}) r`, rows.params);
    return readMetrics(row);
  },

  /** Custom events (the activity feed's event.triggered) of the range. */
  async customEventCount(em: EntityManager, projectId: string, range: TimeRange): Promise<number> {
    const rows = coveringRows('analytics_event', 'count', projectId, range, `and ${CUSTOM_EVENT_NAME_SQL('name')}`);
    const [row] = await em.execute(`select coalesce(sum(count), 0)::bigint as n from (${rows.sql}) r`, rows.params);
    return Number(row.n);
  },

  async workflowsStarted(em: EntityManager, projectId: string, range: TimeRange): Promise<number> {
    const rows = coveringRows('analytics_workflow', 'started', projectId, range);
    const [row] = await em.execute(`select coalesce(sum(started), 0)::bigint as n from (${rows.sql}) r`, rows.params);
    return Number(row.n);
  },

  async topEvents(em: EntityManager, projectId: string, range: TimeRange, limit: number): Promise<Array<{ name: string; count: number }>> {
    const rows = coveringRows('analytics_event', 'name, count', projectId, range, `and ${CUSTOM_EVENT_NAME_SQL('name')}`);
    const top = await em.execute(`select name, sum(count)::bigint as count from (${rows.sql}) r group by name order by count desc, name limit ?`, [
      ...rows.params,
      limit,
    ]);
    return top.map((r: any) => ({ name: r.name, count: Number(r.count) }));
  },

  /**
   * Campaigns of the range: those whose sending started in it (`audience_fixed_at`, set once when
   * the send starts), with their counts, most sent first.
   */
  async topCampaigns(em: EntityManager, projectId: string, range: TimeRange, limit: number) {
    const rows = await em.execute(
      `select c.id, c.name, c.subject, c.status, c.audience_fixed_at, c.sent_at, c.total_recipients,
              ${EMAIL_METRICS.map((m) => `k.${m}`).join(', ')}
       from campaigns c cross join lateral (${CAMPAIGN_COUNTS}) k
       where c.project_id = ? and c.audience_fixed_at >= ?::timestamptz and c.audience_fixed_at < ?::timestamptz
       order by k.sent desc, c.audience_fixed_at desc, c.id
       limit ?`,
      [projectId, range.start, range.end, limit],
    );
    return rows.map((r: any) => ({
      id: r.id as string,
      name: r.name as string,
      subject: r.subject as string,
      status: r.status as CampaignStatus,
      startedAt: new Date(r.audience_fixed_at),
      sentAt: r.sent_at ? new Date(r.sent_at) : null,
      totalRecipients: r.total_recipients as number,
      metrics: readMetrics(r),
    }));
  },

  async campaignTotals(em: EntityManager, projectId: string, range: TimeRange): Promise<{ campaigns: number; metrics: EmailMetrics }> {
    const [row] = await em.execute(
      `select count(*)::int as campaigns, ${sumMetricsSql('k')}
       from campaigns c cross join lateral (${CAMPAIGN_COUNTS}) k
       where c.project_id = ? and c.audience_fixed_at >= ?::timestamptz and c.audience_fixed_at < ?::timestamptz`,
      [projectId, range.start, range.end],
    );
    return { campaigns: row.campaigns, metrics: readMetrics(row) };
  },
};
