import type { EntityManager } from '@mikro-orm/postgresql';

export interface LoginThrottleLimits {
  /** Consecutive failures one (account, client address) pair may make before it is held off. */
  failuresPerAccountAddress: number;
  /** Attempts one client address may make per window, over every account (successes are refunded). */
  attemptsPerAddress: number;
  windowMinutes: number;
}

/**
 * How hard a password guesser is slowed (issue 13): 10 consecutive wrong passwords for one account
 * from one client address hold that pair off for 15 minutes (a success starts the count over), and
 * one client address gets 100 attempts per 15 minutes over all accounts. Keyed by the pair, so
 * nobody can lock an account's owner out from another address.
 */
export const LOGIN_THROTTLE: LoginThrottleLimits = { failuresPerAccountAddress: 10, attemptsPerAddress: 100, windowMinutes: 15 };

export type LoginAdmission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

/**
 * The login throttle's counters in PostgreSQL, so every API process shares them. An attempt is
 * charged before its password is checked (one statement, row-locked), so a burst of concurrent
 * guesses cannot slip past the limit while the hashes are being computed; a success then resets
 * its pair and refunds its address.
 */
export const loginThrottleRepository = {
  async admit(em: EntityManager, email: string, address: string, limits: LoginThrottleLimits): Promise<LoginAdmission> {
    const [row] = await em.execute<Array<{ pair_admitted: boolean; address_admitted: boolean; pair_wait: number | null; address_wait: number | null }>>(
      `with window_length as (select make_interval(mins => ?) as w),
       pair as (
         insert into login_failures_by_account_address as f (email, address, failures, last_failed_at) values (?, ?, 1, now())
         on conflict (email, address) do update set
           failures = case when f.last_failed_at < now() - (select w from window_length) then 1 else f.failures + 1 end,
           last_failed_at = now()
         where f.failures < ? or f.last_failed_at < now() - (select w from window_length)
         returning 1
       ),
       by_address as (
         insert into login_failures_by_address as a (address, attempts, window_started_at) values (?, 1, now())
         on conflict (address) do update set
           attempts = case when a.window_started_at < now() - (select w from window_length) then 1 else a.attempts + 1 end,
           window_started_at = case when a.window_started_at < now() - (select w from window_length) then now() else a.window_started_at end
         where a.attempts < ? or a.window_started_at < now() - (select w from window_length)
         returning 1
       )
       select exists (select 1 from pair) as pair_admitted,
              exists (select 1 from by_address) as address_admitted,
              (select ceil(extract(epoch from last_failed_at + (select w from window_length) - now()))::int
                 from login_failures_by_account_address where email = ? and address = ?) as pair_wait,
              (select ceil(extract(epoch from window_started_at + (select w from window_length) - now()))::int
                 from login_failures_by_address where address = ?) as address_wait`,
      [limits.windowMinutes, email, address, limits.failuresPerAccountAddress, address, limits.attemptsPerAddress, email, address, address],
    );
    if (row.pair_admitted && row.address_admitted) return { admitted: true };
    const fullWindow = limits.windowMinutes * 60;
    const waits = [!row.pair_admitted ? (row.pair_wait ?? fullWindow) : 0, !row.address_admitted ? (row.address_wait ?? fullWindow) : 0];
    return { admitted: false, retryAfterSeconds: Math.min(fullWindow, Math.max(1, ...waits)) };
  },

  /** A correct password: the pair starts over, and the address gets its attempt back. */
  async succeeded(em: EntityManager, email: string, address: string): Promise<void> {
    await em.execute(
      `with pair as (delete from login_failures_by_account_address where email = ? and address = ?)
       update login_failures_by_address set attempts = greatest(attempts - 1, 0) where address = ?`,
      [email, address, address],
    );
  },

  /** Counters whose window has passed hold nothing any more (the hourly cleanup). */
  async deleteExpired(em: EntityManager, windowMinutes: number): Promise<number> {
    const [row] = await em.execute<Array<{ n: number }>>(
      `with pairs as (delete from login_failures_by_account_address where last_failed_at < now() - make_interval(mins => ?) returning 1),
            addresses as (delete from login_failures_by_address where window_started_at < now() - make_interval(mins => ?) returning 1)
       select (select count(*) from pairs)::int + (select count(*) from addresses)::int as n`,
      [windowMinutes, windowMinutes],
    );
    return row.n;
  },
};
