import type { EntityManager } from '@mikro-orm/postgresql';

export interface UsageReport {
  id: string;
  projectId: string;
  month: Date;
  stripeCustomerId: string;
  quantity: number;
  createdAt: Date;
  reportedAt: Date | null;
}

/**
 * The usage owed to Stripe, as rows written before anything is sent (billing_usage_reports).
 * Planning turns each (project, month) whose counters passed the last report's `to_total` (the
 * watermark) into a new row covering the difference; sending a row uses its id as Stripe's
 * idempotency key and meter-event identifier, so sending it again (after an outage, a crash, a
 * retried activity) reports nothing twice. Rows stay until they are sent, however long that takes.
 */
export const usageReportRepository = {
  /**
   * Writes the reports now owed: projects with a Stripe subscription, this month and the last
   * (Stripe takes meter events up to 35 days old). Answers the unsent reports, oldest first.
   */
  async plan(em: EntityManager, limit: number): Promise<string[]> {
    await em.execute(
      `insert into billing_usage_reports (project_id, month, stripe_customer_id, from_total, to_total)
       select t.project_id, t.month, a.stripe_customer_id, coalesce(w.watermark, 0), t.total
       from (select project_id, month, sum(used) as total from billing_usage
             where month >= (date_trunc('month', now() at time zone 'utc') - interval '1 month')::date
             group by project_id, month) t
       join billing_accounts a on a.project_id = t.project_id and a.stripe_subscription_id is not null
       left join lateral (select max(to_total) as watermark from billing_usage_reports r where r.project_id = t.project_id and r.month = t.month) w on true
       where t.total > coalesce(w.watermark, 0)
       on conflict (project_id, month, to_total) do nothing`,
    );
    const rows = await em.execute(`select id from billing_usage_reports where reported_at is null order by created_at, id limit ?`, [limit]);
    return rows.map((r: any) => r.id as string);
  },

  async find(em: EntityManager, id: string): Promise<UsageReport | null> {
    const rows = await em.execute(`select * from billing_usage_reports where id = ?`, [id]);
    if (!rows.length) return null;
    const r = rows[0];
    return {
      id: r.id,
      projectId: r.project_id,
      month: new Date(r.month),
      stripeCustomerId: r.stripe_customer_id,
      quantity: Number(r.to_total) - Number(r.from_total),
      createdAt: new Date(r.created_at),
      reportedAt: r.reported_at ? new Date(r.reported_at) : null,
    };
  },

  async markReported(em: EntityManager, id: string): Promise<void> {
    await em.execute(`update billing_usage_reports set reported_at = coalesce(reported_at, now()), attempts = attempts + 1, last_error = null where id = ?`, [
      id,
    ]);
  },

  async markFailed(em: EntityManager, id: string, error: string): Promise<void> {
    await em.execute(`update billing_usage_reports set attempts = attempts + 1, last_error = ? where id = ?`, [error.slice(0, 1000), id]);
  },
};
