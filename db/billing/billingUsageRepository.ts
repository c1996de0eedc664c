import type { EntityManager } from '@mikro-orm/postgresql';

import { USAGE_CATEGORIES, type UsageCategory } from '../../shared/billingSchemas';

/** The categories of contract 17, as billing_limits and billing_usage name them (shared/: the dashboard lists them too). */
export { USAGE_CATEGORIES, type UsageCategory };

export interface CategoryUsage {
  limit: number | null;
  usage: number;
}

/** The month a cap applies to: the calendar month (UTC) of the transaction's time, as emails.created_at. */
const CURRENT_MONTH = `date_trunc('month', now() at time zone 'utc')::date`;

/**
 * The per-project monthly caps (billing_limits, a row per capped category) and the counters they
 * are enforced against (billing_usage, a row per project, month and category, created by the
 * month's first count). What a cap allows and who counts what: services/billing/usageCaps.ts.
 *
 * A counter is raised in the transaction that records the emails: its row lock makes a second
 * transaction at the edge wait for the first to commit and then see its count.
 */
export const billingUsageRepository = {
  /**
   * Raises this month's counter by `n` unless that takes it past the category's cap, in one
   * conditional UPDATE, so two transactions can never both pass a cap. False when the cap
   * refused it: nothing was counted.
   */
  async raiseWithinCap(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<boolean> {
    const raise = () => em.execute(`${billingUsageRepository.raiseWithinCapSql()} returning u.used`, [n, projectId, category, n]);
    // One statement once the month's row exists; the month's first send creates it and tries again.
    if ((await raise()).length) return true;
    await ensureCounter(em, projectId, category);
    return (await raise()).length > 0;
  },

  /**
   * raiseWithinCap's conditional UPDATE, for a statement that records what it counts in the same
   * go (its parameters: n, project id, category, n; add a RETURNING). It raises nothing when this
   * month's counter does not exist yet.
   */
  raiseWithinCapSql(): string {
    return `update billing_usage u set used = u.used + ?
         where u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = ?
           and u.used + ? <= coalesce((select monthly_limit from billing_limits l where l.project_id = u.project_id and l.category = u.category), 9223372036854775807)`;
  },

  /**
   * Locks this month's counter row (creating it) until the transaction ends, so a concurrent
   * transaction reads the count this one leaves; answers its count and the cap. Must run inside a
   * transaction.
   */
  async lockCounter(em: EntityManager, projectId: string, category: UsageCategory): Promise<{ used: number; limit: number | null }> {
    await ensureCounter(em, projectId, category);
    const [row] = await em.execute(
      `select u.used, l.monthly_limit from billing_usage u
       left join billing_limits l on l.project_id = u.project_id and l.category = u.category
       where u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = ?
       for update of u`,
      [projectId, category],
    );
    return { used: Number(row.used), limit: row.monthly_limit === null ? null : Number(row.monthly_limit) };
  },

  /** Raises this month's counter by `n` (creating it), whatever the cap. */
  async raise(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<void> {
    await ensureCounter(em, projectId, category);
    await em.execute(`update billing_usage set used = used + ? where project_id = ? and month = ${CURRENT_MONTH} and category = ?`, [n, projectId, category]);
  },

  /** Whether the category has a cap: a read that locks nothing. */
  async hasCap(em: EntityManager, projectId: string, category: UsageCategory): Promise<boolean> {
    const [cap] = await em.execute(`select 1 from billing_limits where project_id = ? and category = ?`, [projectId, category]);
    return cap !== undefined;
  },

  /** Lowers the counter of `month` (the month the emails were recorded in; default the current one) by `n`, never below 0. */
  async release(em: EntityManager, projectId: string, category: UsageCategory, n: number, month?: Date): Promise<void> {
    await em.execute(
      `update billing_usage set used = greatest(used - ?, 0)
       where project_id = ? and category = ? and month = coalesce(date_trunc('month', ?::timestamptz at time zone 'utc')::date, ${CURRENT_MONTH})`,
      [n, projectId, category, month ?? null],
    );
  },

  /**
   * Gives back what emails leaving the count took, from rows naming `project_id`, `source` and
   * `created_at` (a data-modifying CTE over `input`, for statements that end or delete emails).
   * The source's category as services/billing/usageCaps.ts categoryOfSource names it.
   */
  releaseSql(input: string): string {
    return `update billing_usage u set used = greatest(u.used - r.n, 0)
       from (select project_id, case source when 'TRANSACTIONAL' then 'transactional' when 'CAMPAIGN' then 'campaigns' else 'workflows' end as category,
                    date_trunc('month', created_at at time zone 'utc')::date as month, count(*) as n
             from ${input} group by 1, 2, 3) r
       where u.project_id = r.project_id and u.category = r.category and u.month = r.month`;
  },

  /** A category's cap and this month's count, read without locks. */
  async current(em: EntityManager, projectId: string, category: UsageCategory): Promise<CategoryUsage> {
    const [row] = await em.execute(
      `select (select monthly_limit from billing_limits where project_id = ? and category = ?) as monthly_limit,
              coalesce((select used from billing_usage where project_id = ? and month = ${CURRENT_MONTH} and category = ?), 0) as used`,
      [projectId, category, projectId, category],
    );
    return { limit: row.monthly_limit === null ? null : Number(row.monthly_limit), usage: Number(row.used) };
  },

  /** Every category's cap and this month's usage. */
  async all(em: EntityManager, projectId: string): Promise<Record<UsageCategory, CategoryUsage>> {
    const rows = await em.execute(
      `select c.category, l.monthly_limit, coalesce(u.used, 0) as used
       from unnest(?::text[]) as c(category)
       left join billing_limits l on l.project_id = ? and l.category = c.category
       left join billing_usage u on u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = c.category`,
      [`{${USAGE_CATEGORIES.join(',')}}`, projectId, projectId],
    );
    const out = {} as Record<UsageCategory, CategoryUsage>;
    for (const r of rows as any[])
      out[r.category as UsageCategory] = { limit: r.monthly_limit === null ? null : Number(r.monthly_limit), usage: Number(r.used) };
    return out;
  },

  /** Replaces every category's cap (null = unlimited) in one transaction. */
  async setLimits(em: EntityManager, projectId: string, limits: Record<UsageCategory, number | null>): Promise<void> {
    await em.transactional(async (tx) => {
      for (const category of USAGE_CATEGORIES) {
        const limit = limits[category];
        if (limit === null) await tx.execute(`delete from billing_limits where project_id = ? and category = ?`, [projectId, category]);
        else {
          await tx.execute(
            `insert into billing_limits (project_id, category, monthly_limit) values (?, ?, ?)
             on conflict (project_id, category) do update set monthly_limit = excluded.monthly_limit, updated_at = now()`,
            [projectId, category, limit],
          );
        }
      }
    });
  },

  /** This month's totals by category (the counters), for the consumption report. */
  async monthTotals(em: EntityManager, projectId: string): Promise<{ periodStart: Date; periodEnd: Date; byCategory: Record<UsageCategory, number> }> {
    const [row] = await em.execute(`select ${CURRENT_MONTH}::timestamp at time zone 'utc' as start`);
    const periodStart = new Date(row.start);
    const periodEnd = new Date(Date.UTC(periodStart.getUTCFullYear(), periodStart.getUTCMonth() + 1, 1));
    const all = await this.all(em, projectId);
    const byCategory = Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, all[c].usage])) as Record<UsageCategory, number>;
    return { periodStart, periodEnd, byCategory };
  },
};

async function ensureCounter(em: EntityManager, projectId: string, category: UsageCategory): Promise<void> {
  await em.execute(`insert into billing_usage (project_id, month, category) values (?, ${CURRENT_MONTH}, ?) on conflict do nothing`, [projectId, category]);
}
