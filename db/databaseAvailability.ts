/**
 * Tells "the database cannot be reached or is going away" from "the database refused this
 * statement". The first passes by itself (a restart, a failover, a network cut): the API answers
 * it 503 with Retry-After and delivery waits it out; the second is an answer to act on.
 */

/**
 * SQLSTATE class 08 (connection exceptions; 08P01 is a protocol violation, i.e. a bad request),
 * 57P01–57P03 (shutting down, crashed, starting up), 53300 (too many connections).
 */
const UNAVAILABLE_SQLSTATES = /^(08(?!P01)...|57P0[123]|53300)$/;
/** The driver's socket errors. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * A connection the server closed; no pooled connection within the pool's timeout; the server's own
 * words while it goes down or comes up. Knex's "Transaction query already complete" is what the
 * statements queued on a transaction get once its connection was lost (knex ends the transaction
 * on the connection's error); Mailroom issues no statement after its own commit (every
 * transaction is an `em.transactional` callback), so here it only ever means the connection died.
 */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|Transaction query already complete|Unable to acquire a connection|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|the database system is (shutting down|starting up|in recovery mode)|terminating connection due to administrator command/i;

/** True when `err` (or anything along its `cause` chain) says PostgreSQL is unreachable or going away. */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  const e = err as { code?: unknown; sqlState?: unknown; errno?: unknown; message?: unknown; cause?: unknown };
  if (!e || typeof e !== 'object' || depth > 10) return false;
  const codes = [e.code, e.sqlState, e.errno].filter((c): c is string => typeof c === 'string');
  return (
    codes.some((c) => UNAVAILABLE_SQLSTATES.test(c) || UNAVAILABLE_SOCKET_CODES.has(c)) ||
    (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) ||
    (e.cause !== undefined && e.cause !== err && isDatabaseUnavailable(e.cause, depth + 1))
  );
}

export interface WhileUnavailableOptions {
  /** Give up (rethrow the last error) once the database has been away this long. */
  patienceMs: number;
  /** Called before each wait (e.g. an activity's heartbeat, so a long wait is not taken for a dead worker). */
  onWait?: (err: unknown) => void;
}

/**
 * Runs `fn`, and again after a growing pause (0.25 s doubling to 5 s) while it fails because the
 * database is away, for at most `patienceMs`; any other failure is thrown at once.
 */
export async function retryWhileDatabaseUnavailable<T>(fn: () => Promise<T>, options: WhileUnavailableOptions): Promise<T> {
  const giveUpAt = Date.now() + options.patienceMs;
  for (let pauseMs = 250; ; pauseMs = Math.min(pauseMs * 2, 5000)) {
    try {
      return await fn();
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() + pauseMs > giveUpAt) throw err;
      options.onWait?.(err);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}
