/**
 * Retrying a start-up step against Temporal until it answers: the API and the worker may start
 * before Temporal does (or while it restarts), so they wait, saying so once per attempt, instead
 * of crashing.
 */
import type { Logger } from '../lib/logger';
import { temporalErrorReason } from './temporalErrors';

export const FIRST_RETRY_DELAY_MS = 1000;
export const MAX_RETRY_DELAY_MS = 30_000;

/** A sleep that `wake()` cuts short, so news that Temporal is back need not wait out the backoff. */
export class Wakeup {
  private wakers = new Set<() => void>();

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  wake(): void {
    for (const waker of [...this.wakers]) waker();
  }
}

/** A failure that waiting cannot cure: the caller stops and shows `message` to the operator. */
export class TemporalSetupError extends Error {}

/** A failure worth waiting out, with the log line that tells the operator what we wait for. */
export class WaitingFor extends Error {
  constructor(
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface RetryOptions {
  address: string;
  logger: Logger;
  /** Aborting stops the waiting; the promise then rejects with the last error. */
  signal?: AbortSignal;
  wakeup?: Wakeup;
  firstDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs `attempt` until it succeeds, doubling the pause from 1 s up to 30 s. A TemporalSetupError
 * ends the wait at once; a WaitingFor is logged with its own message; any other error counts as
 * Temporal not answering yet.
 */
export async function retryUntilTemporalAnswers<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const first = options.firstDelayMs ?? FIRST_RETRY_DELAY_MS;
  const max = options.maxDelayMs ?? MAX_RETRY_DELAY_MS;
  const wakeup = options.wakeup ?? new Wakeup();
  let delayMs = first;
  for (let attemptNo = 1; ; attemptNo++) {
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof TemporalSetupError || options.signal?.aborted) throw err;
      const fields = { event: 'temporal.waiting', temporalAddress: options.address, attempt: attemptNo, retryInMs: delayMs };
      if (err instanceof WaitingFor) options.logger.warn({ ...fields, ...err.fields }, err.message);
      else options.logger.warn({ ...fields, error: temporalErrorReason(err) }, `waiting for Temporal at ${options.address}`);
      await wakeup.sleep(delayMs, options.signal);
      if (options.signal?.aborted) throw err;
      delayMs = Math.min(delayMs * 2, max);
    }
  }
}
