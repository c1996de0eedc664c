import type { EntityManager } from '@mikro-orm/postgresql';
import { ADDRESS_BUDGETS, chargeCte, chargeParams, clientAddressBudget, waitParams, waitSql, type AddressBudget, type Admission } from './clientAddressBudget';

export interface LoginThrottleLimits {
  /** Consecutive failures one (account, client address) pair may make before it is held off. */
  failuresPerAccountAddress: number;
  /** Attempts one client address may make per window, over every account (successes are refunded). */
  perAddress: AddressBudget;
  windowMinutes: number;
}

/**
 * How hard a password guesser is slowed (issue 13): 10 consecutive wrong passwords for one account
 * from one client address hold that pair off for 15 minutes (a success starts the count over), and
 * one client address gets 100 attempts per 15 minutes over all accounts. Keyed by the pair, so
 * nobody can lock an account's owner out from another address.
 */
export const LOGIN_THROTTLE: LoginThrottleLimits = {
  failuresPerAccountAddress: 10,
  perAddress: ADDRESS_BUDGETS.LOGIN,
  windowMinutes: 15,
};

/**
 * The login throttle's counters in PostgreSQL, so every API process shares them. An attempt is
 * charged before its password is checked (one statement, row-locked), so a burst of concurrent
 * guesses cannot slip past the limit while the hashes are being computed; a success then resets
 * its pair and refunds its address.
 */
export const loginThrottleRepository = {
  async admit(em: EntityManager, email: string, address: string, limits: LoginThrottleLimits): Promise<Admission> {
    const w = limits.windowMinutes;
    const [row] = await em.execute<Array<{ pair_admitted: boolean; address_admitted: boolean; pair_wait: number | null; address_wait: number | null }>>(
      `with pair as (
         insert into login_failures_by_account_address as f (email, address, failures, last_failed_at) values (?, ?, 1, now())
         on conflict (email, address) do update set
           failures = case when f.last_failed_at < now() - make_interval(mins => ?) then 1 else f.failures + 1 end,
           last_failed_at = now()
         where f.failures < ? or f.last_failed_at < now() - make_interval(mins => ?)
         returning 1
       ),
       ${chargeCte('by_address')}
       select exists (select 1 from pair) as pair_admitted,
              exists (select 1 from by_address) as address_admitted,
              (select ceil(extract(epoch from last_failed_at + make_interval(mins => ?) - now()))::int
                 from login_failures_by_account_address where email = ? and address = ?) as pair_wait,
              ${waitSql} as address_wait`,
      [
        ...[email, address, w, limits.failuresPerAccountAddress, w],
        ...chargeParams(limits.perAddress, address),
        ...[w, email, address],
        ...waitParams(limits.perAddress, address),
      ],
    );
    if (row.pair_admitted && row.address_admitted) return { admitted: true };
    const fullWindow = Math.max(w, limits.perAddress.windowMinutes) * 60;
    const waits = [!row.pair_admitted ? (row.pair_wait ?? w * 60) : 0, !row.address_admitted ? (row.address_wait ?? fullWindow) : 0];
    return { admitted: false, retryAfterSeconds: Math.min(fullWindow, Math.max(1, ...waits)) };
  },

  /** A correct password: the pair starts over, and the address gets its attempt back. */
  async succeeded(em: EntityManager, email: string, address: string): Promise<void> {
    await em.execute(`delete from login_failures_by_account_address where email = ? and address = ?`, [email, address]);
    await clientAddressBudget.refund(em, LOGIN_THROTTLE.perAddress.purpose, address);
  },

  /** Pair counters whose window has passed hold nothing any more (the hourly cleanup). */
  async deleteExpired(em: EntityManager, windowMinutes: number): Promise<number> {
    const [row] = await em.execute<Array<{ n: number }>>(
      `with gone as (delete from login_failures_by_account_address where last_failed_at < now() - make_interval(mins => ?) returning 1) select count(*)::int as n from gone`,
      [windowMinutes],
    );
    return row.n;
  },
};
