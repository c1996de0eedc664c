import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailSource } from '../emails/emailKinds';

/** The categories of contract 17; received mail (services/inbound) counts against `inbound`. */
export const USAGE_CATEGORIES = ['transactional', 'campaigns', 'workflows', 'inbound'] as const;
export type UsageCategory = (typeof USAGE_CATEGORIES)[number];

/** Which category an email counts against. */
export const categoryOfSource: Record<EmailSource, UsageCategory> = {
  TRANSACTIONAL: 'transactional',
  CAMPAIGN: 'campaigns',
  WORKFLOW: 'workflows',
  INBOUND: 'inbound',
};

/** The month a cap applies to: the calendar month (UTC) of the transaction's time, as emails.created_at. */
const CURRENT_MONTH = `date_trunc('month', now() at time zone 'utc')::date`;

/** A reservation that would take a category past its cap; nothing was reserved. */
export class BillingLimitExceeded extends Error {
  constructor(
    readonly category: UsageCategory,
    readonly limit: number,
    readonly used: number,
    readonly requested: number,
  ) {
    super(
      `The ${category} cap of ${limit} emails this month (UTC) is reached: ${used} counted, ${requested} more would pass it. ` +
        `Raise or lift it with PUT /users/@me/projects/:id/billing-limits.`,
    );
    this.name = 'BillingLimitExceeded';
  }
}

export interface CategoryUsage {
  limit: number | null;
  usage: number;
}

/**
 * The per-project monthly caps (contract 17) and the counters they are enforced against.
 *
 * A counter row per (project, month, category) is raised by a conditional UPDATE in the same
 * transaction that records the emails: the row lock makes a second send at the edge wait for the
 * first to commit and then see its count, so two sends can never both pass a cap. The counter is
 * lowered when an email ends FAILED or SUPPRESSED or is withdrawn before any attempt (`release`),
 * so it always equals the month's emails of that source that were not FAILED or SUPPRESSED (those
 * since deleted included: deleting data gives no quota back).
 *
 * Callers: services/sending/deliveryScheduler.ts (transactional sends, campaign test emails), the
 * campaign batch (activities/campaignActivities.ts, with `reserveUpTo`), the workflow SEND_EMAIL
 * step (`reserve` with category 'workflows'), and received mail (services/inbound/inboundProcessing.ts:
 * `headroom`, then `add`). Lock order: one category row per call; a caller reserving for several
 * projects does so in project id order.
 */
export const usageCaps = {
  /**
   * Counts `n` emails against `category` this month, all or nothing; throws BillingLimitExceeded
   * when that would pass the cap. Call it inside the transaction that records the emails, so a
   * rollback takes the reservation back with them.
   */
  async reserve(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<void> {
    if (n <= 0) return;
    const raise = () =>
      em.execute(
        `update billing_usage u set used = u.used + ?
         where u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = ?
           and u.used + ? <= coalesce((select monthly_limit from billing_limits l where l.project_id = u.project_id and l.category = u.category), 9223372036854775807)
         returning u.used`,
        [n, projectId, category, n],
      );
    // One statement once the month's row exists; the month's first send creates it and tries again.
    if ((await raise()).length) return;
    await ensureCounter(em, projectId, category);
    if ((await raise()).length) return;
    const { limit, usage } = await this.current(em, projectId, category);
    throw new BillingLimitExceeded(category, limit ?? 0, usage, n);
  },

  /**
   * Counts as many of `n` emails as the cap still allows and answers how many (0 … n): a
   * campaign batch sends that many and stops there. Must run inside a transaction (it locks the
   * counter row between reading and raising it).
   */
  async reserveUpTo(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<{ granted: number; limit: number | null }> {
    if (n <= 0) return { granted: 0, limit: null };
    const { limit, used } = await lockCounter(em, projectId, category);
    const granted = limit === null ? n : Math.max(0, Math.min(n, limit - used));
    if (granted > 0) {
      await em.execute(`update billing_usage set used = used + ? where project_id = ? and month = ${CURRENT_MONTH} and category = ?`, [
        granted,
        projectId,
        category,
      ]);
    }
    return { granted, limit };
  },

  /**
   * How many more emails the cap allows this month (0 once it is reached), and the cap; null when
   * the category has no cap. With a cap, the counter row stays locked until the transaction
   * ends, so a concurrent transaction reads the count this one leaves. Must run inside a
   * transaction; received mail uses it to tell which copies are past the cap (they are still
   * recorded and counted with `add`, without an event).
   */
  async headroom(em: EntityManager, projectId: string, category: UsageCategory): Promise<{ left: number; limit: number } | null> {
    // No cap, nothing to lock: a project without one does not queue its transactions on the row.
    const [cap] = await em.execute(`select 1 from billing_limits where project_id = ? and category = ?`, [projectId, category]);
    if (!cap) return null;
    const { limit, used } = await lockCounter(em, projectId, category);
    return limit === null ? null : { left: Math.max(0, limit - used), limit };
  },

  /**
   * Counts `n` emails whatever the cap: received mail was already let in (the inbound listener
   * answers 452 at RCPT to a project at its cap, SES cannot be asked to keep a message), and a
   * message cannot be handed back once taken.
   */
  async add(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<void> {
    if (n <= 0) return;
    await ensureCounter(em, projectId, category);
    await em.execute(`update billing_usage set used = used + ? where project_id = ? and month = ${CURRENT_MONTH} and category = ?`, [n, projectId, category]);
  },

  /** Gives back `n` emails counted in `month` (the month the emails were recorded in; default the current one). */
  async release(em: EntityManager, projectId: string, category: UsageCategory, n: number, month?: Date): Promise<void> {
    if (n <= 0) return;
    await em.execute(
      `update billing_usage set used = greatest(used - ?, 0)
       where project_id = ? and category = ? and month = coalesce(date_trunc('month', ?::timestamptz at time zone 'utc')::date, ${CURRENT_MONTH})`,
      [n, projectId, category, month ?? null],
    );
  },

  /**
   * Gives back what emails leaving the count took, from rows naming `project_id`, `source` and
   * `created_at` (a data-modifying CTE over `input`, for statements that end or delete emails).
   */
  releaseSql(input: string): string {
    return `update billing_usage u set used = greatest(u.used - r.n, 0)
       from (select project_id, case source when 'TRANSACTIONAL' then 'transactional' when 'CAMPAIGN' then 'campaigns' else 'workflows' end as category,
                    date_trunc('month', created_at at time zone 'utc')::date as month, count(*) as n
             from ${input} group by 1, 2, 3) r
       where u.project_id = r.project_id and u.category = r.category and u.month = r.month`;
  },

  /**
   * Would `n` more emails pass the cap right now? A read without locks, for refusing a send
   * before anything is written; the reservation in the recording transaction is what decides.
   */
  async wouldExceed(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<BillingLimitExceeded | null> {
    const { limit, usage } = await this.current(em, projectId, category);
    return limit !== null && usage + n > limit ? new BillingLimitExceeded(category, limit, usage, n) : null;
  },

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

/** Locks this month's counter row (creating it) until the transaction ends; its count and the cap. */
async function lockCounter(em: EntityManager, projectId: string, category: UsageCategory): Promise<{ used: number; limit: number | null }> {
  await ensureCounter(em, projectId, category);
  const [row] = await em.execute(
    `select u.used, l.monthly_limit from billing_usage u
     left join billing_limits l on l.project_id = u.project_id and l.category = u.category
     where u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = ?
     for update of u`,
    [projectId, category],
  );
  return { used: Number(row.used), limit: row.monthly_limit === null ? null : Number(row.monthly_limit) };
}

async function ensureCounter(em: EntityManager, projectId: string, category: UsageCategory): Promise<void> {
  await em.execute(`insert into billing_usage (project_id, month, category) values (?, ${CURRENT_MONTH}, ?) on conflict do nothing`, [projectId, category]);
}
