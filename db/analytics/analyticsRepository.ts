import type { EntityManager } from '@mikro-orm/postgresql';
import { CUSTOM_EVENT_NAME_SQL, EMAIL_METRICS, readMetrics, sumMetricsSql, type EmailMetrics } from './emailMetrics';

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

/**
 * Dashboard numbers, read from the rollups only (analytics_email_hourly, analytics_campaign_counts,
 * analytics_event_hourly, analytics_workflow_hourly): never from the emails or events tables.
 */
export const analyticsRepository = {
  /** One point per bucket of the range, zeros included, oldest first. */
  async timeseries(em: EntityManager, projectId: string, range: TimeRange, granularity: Granularity, source: EmailSource | null): Promise<TimeseriesPoint[]> {
    const rows = await em.execute(
      `with buckets as (
         select generate_series(date_trunc(?, ?::timestamptz, 'UTC'), ?::timestamptz - interval '1 microsecond', make_interval(hours => ?)) as bucket
       ),
       counts as (
         select date_trunc(?, h.bucket, 'UTC') as bucket, ${sumMetricsSql('h')}
         from analytics_email_hourly h
         where h.project_id = ? and h.bucket >= date_trunc(?, ?::timestamptz, 'UTC') and h.bucket < ?::timestamptz
           ${source ? 'and h.source = ?' : ''}
         group by 1
       )
       select to_char(b.bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as bucket, ${EMAIL_METRICS.map((m) => `coalesce(c.${m}, 0) as ${m}`).join(', ')}
       from buckets b left join counts c on c.bucket = b.bucket
       order by b.bucket`,
      [
        granularity,
        range.start,
        range.end,
        granularity === 'day' ? 24 : 1,
        granularity,
        projectId,
        granularity,
        range.start,
        range.end,
        ...(source ? [source] : []),
      ],
    );
    return rows.map((r: Record<string, unknown>) => ({ bucket: String(r.bucket), ...readMetrics(r) }));
  },

  async emailTotals(em: EntityManager, projectId: string, range: TimeRange): Promise<EmailMetrics> {
    const [row] = await em.execute(
      `select ${sumMetricsSql('h')} from analytics_email_hourly h
       where h.project_id = ? and h.bucket >= date_trunc('hour', ?::timestamptz, 'UTC') and h.bucket < ?::timestamptz`,
      [projectId, range.start, range.end],
    );
    return readMetrics(row);
  },

  /** Custom events (the activity feed's event.triggered) of the range. */
  async customEventCount(em: EntityManager, projectId: string, range: TimeRange): Promise<number> {
    const [row] = await em.execute(
      `select coalesce(sum(count), 0)::bigint as n from analytics_event_hourly
       where project_id = ? and bucket >= date_trunc('hour', ?::timestamptz, 'UTC') and bucket < ?::timestamptz and ${CUSTOM_EVENT_NAME_SQL('name')}`,
      [projectId, range.start, range.end],
    );
    return Number(row.n);
  },

  async workflowsStarted(em: EntityManager, projectId: string, range: TimeRange): Promise<number> {
    const [row] = await em.execute(
      `select coalesce(sum(started), 0)::bigint as n from analytics_workflow_hourly
       where project_id = ? and bucket >= date_trunc('hour', ?::timestamptz, 'UTC') and bucket < ?::timestamptz`,
      [projectId, range.start, range.end],
    );
    return Number(row.n);
  },

  async topEvents(em: EntityManager, projectId: string, range: TimeRange, limit: number): Promise<Array<{ name: string; count: number }>> {
    const rows = await em.execute(
      `select name, sum(count)::bigint as count from analytics_event_hourly
       where project_id = ? and bucket >= date_trunc('hour', ?::timestamptz, 'UTC') and bucket < ?::timestamptz and ${CUSTOM_EVENT_NAME_SQL('name')}
       group by name order by count desc, name limit ?`,
      [projectId, range.start, range.end, limit],
    );
    return rows.map((r: any) => ({ name: r.name, count: Number(r.count) }));
  },

  /**
   * Campaigns of the range: those whose sending started in it (`audience_fixed_at`, set once when
   * the send starts), with their counts, most sent first.
   */
  async topCampaigns(em: EntityManager, projectId: string, range: TimeRange, limit: number) {
    const rows = await em.execute(
      `select c.id, c.name, c.subject, c.status, c.audience_fixed_at, c.sent_at, c.total_recipients,
              ${EMAIL_METRICS.map((m) => `coalesce(k.${m}, 0)::bigint as ${m}`).join(', ')}
       from campaigns c left join analytics_campaign_counts k on k.campaign_id = c.id
       where c.project_id = ? and c.audience_fixed_at >= ?::timestamptz and c.audience_fixed_at < ?::timestamptz
       order by coalesce(k.sent, 0) desc, c.audience_fixed_at desc, c.id
       limit ?`,
      [projectId, range.start, range.end, limit],
    );
    return rows.map((r: any) => ({
      id: r.id as string,
      name: r.name as string,
      subject: r.subject as string,
      status: r.status as string,
      startedAt: new Date(r.audience_fixed_at),
      sentAt: r.sent_at ? new Date(r.sent_at) : null,
      totalRecipients: r.total_recipients as number,
      metrics: readMetrics(r),
    }));
  },

  async campaignTotals(em: EntityManager, projectId: string, range: TimeRange): Promise<{ campaigns: number; metrics: EmailMetrics }> {
    const [row] = await em.execute(
      `select count(*)::int as campaigns, ${sumMetricsSql('k')}
       from campaigns c left join analytics_campaign_counts k on k.campaign_id = c.id
       where c.project_id = ? and c.audience_fixed_at >= ?::timestamptz and c.audience_fixed_at < ?::timestamptz`,
      [projectId, range.start, range.end],
    );
    return { campaigns: row.campaigns, metrics: readMetrics(row) };
  },
};
