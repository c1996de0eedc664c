import type { EntityManager } from '@mikro-orm/postgresql';

/** What a client address spends a budget on; each has its own counter. */
export type AddressBudgetPurpose = 'LOGIN' | 'ACCOUNT_MAIL';

export interface AddressBudget {
  purpose: AddressBudgetPurpose;
  /** Attempts per window. */
  attempts: number;
  windowMinutes: number;
}

/**
 * Per client address, over all accounts (and whether or not they exist): 100 login attempts per
 * 15 minutes (a success is refunded), and 30 account-mail requests (password reset, verification)
 * per 15 minutes, so one client cannot make the service start endless mail runs.
 */
export const ADDRESS_BUDGETS = {
  LOGIN: { purpose: 'LOGIN', attempts: 100, windowMinutes: 15 },
  ACCOUNT_MAIL: { purpose: 'ACCOUNT_MAIL', attempts: 30, windowMinutes: 15 },
} as const satisfies Record<AddressBudgetPurpose, AddressBudget>;

export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

/**
 * A CTE named `name` that charges one attempt to a client address's budget (fixed windows) and
 * returns a row only when the attempt is admitted; its parameters are `chargeParams(...)`. The
 * upsert locks the row, so concurrent attempts on any API process count each other.
 */
export function chargeCte(name: string): string {
  return `${name} as (
    insert into client_address_attempts as a (purpose, address, attempts, window_started_at) values (?, ?, 1, now())
    on conflict (purpose, address) do update set
      attempts = case when a.window_started_at < now() - make_interval(mins => ?) then 1 else a.attempts + 1 end,
      window_started_at = case when a.window_started_at < now() - make_interval(mins => ?) then now() else a.window_started_at end
    where a.attempts < ? or a.window_started_at < now() - make_interval(mins => ?)
    returning 1
  )`;
}
export function chargeParams(budget: AddressBudget, address: string): unknown[] {
  const w = budget.windowMinutes;
  return [budget.purpose, address, w, w, budget.attempts, w];
}

/** A scalar subquery: seconds until the address's window ends (null without a counter); parameters `waitParams(...)`. */
export const waitSql = `(select ceil(extract(epoch from window_started_at + make_interval(mins => ?) - now()))::int
   from client_address_attempts where purpose = ? and address = ?)`;
export function waitParams(budget: AddressBudget, address: string): unknown[] {
  return [budget.windowMinutes, budget.purpose, address];
}

export const clientAddressBudget = {
  /** Charges one attempt; refused when the address has used its budget for this window. */
  async charge(em: EntityManager, budget: AddressBudget, address: string): Promise<Admission> {
    const [row] = await em.execute<Array<{ admitted: boolean; wait: number | null }>>(
      `with ${chargeCte('charged')} select exists (select 1 from charged) as admitted, ${waitSql} as wait`,
      [...chargeParams(budget, address), ...waitParams(budget, address)],
    );
    if (row.admitted) return { admitted: true };
    return { admitted: false, retryAfterSeconds: Math.min(budget.windowMinutes * 60, Math.max(1, row.wait ?? budget.windowMinutes * 60)) };
  },

  /** Gives one attempt back (a login that succeeded). */
  async refund(em: EntityManager, purpose: AddressBudgetPurpose, address: string): Promise<void> {
    await em.execute(`update client_address_attempts set attempts = greatest(attempts - 1, 0) where purpose = ? and address = ?`, [purpose, address]);
  },

  /** Counters whose window has passed hold nothing any more (the hourly cleanup). */
  async deleteExpired(em: EntityManager): Promise<number> {
    const longestWindow = Math.max(...Object.values(ADDRESS_BUDGETS).map((b) => b.windowMinutes));
    const [row] = await em.execute<Array<{ n: number }>>(
      `with gone as (delete from client_address_attempts where window_started_at < now() - make_interval(mins => ?) returning 1) select count(*)::int as n from gone`,
      [longestWindow],
    );
    return row.n;
  },
};
