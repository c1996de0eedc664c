import type { Logger } from '../lib/logger';

/** When a crashed process is restarted, and when the supervisor gives up on it. */
export interface RestartPolicy {
  /** Crashes in a row, each after a run shorter than `stableAfterMs`, that make the supervisor give up. */
  maxCrashes: number;
  /** The first restart waits this long; each further crash in a row doubles it, up to `maxDelayMs`. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A run at least this long counts as stable: the next crash starts the backoff over. */
  stableAfterMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  maxCrashes: 5,
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  stableAfterMs: 60_000,
};

export interface GiveUpSummary {
  crashes: number;
  /** Each of those crashes ended a run shorter than this. */
  stableAfterMs: number;
  lastOutput: string[];
}

export interface CrashedRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** When the run that ended began (Date.now()); a start that failed began when it was tried. */
  startedAt: number;
  /** Its last lines of output, quoted when the supervisor gives up. */
  lastOutput: string[];
  /** Why it ended, when there is more to say than an exit code (e.g. a restart that failed). */
  reason?: string;
}

/**
 * The one home of the supervision rule `npm start` applies to everything it runs (the API, the
 * worker, the embedded PostgreSQL and Temporal dev server): each crash is logged, the process is
 * started again after a backoff that doubles with each crash in a row, and after `maxCrashes`
 * crashes in a row, none after a run of `stableAfterMs` or more, it gives up (and Mailroom stops).
 * `name` is the `process` field of the log lines; `label` what the messages call it.
 *
 * Counted in a row rather than within a time window: a part that takes a while to fail (a slow
 * start on a busy machine, a connection that times out) would otherwise never have 5 crashes
 * within the window once the backoff grows, and would be restarted for ever without a word of
 * giving up. Any 5 crashes within a minute are also 5 in a row by this count.
 */
export class CrashLoopGuard {
  private crashesInARow = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private cancelled = false;
  private readonly policy: RestartPolicy;

  constructor(
    private readonly options: {
      name: string;
      label?: string;
      log: Logger;
      policy?: RestartPolicy;
      onGiveUp: (summary: GiveUpSummary) => void;
    },
  ) {
    this.policy = options.policy ?? DEFAULT_RESTART_POLICY;
  }

  /** Logs the crash, then calls `restart` after the backoff, or gives up. Nothing happens once cancelled. */
  crashed(run: CrashedRun, restart: () => void): void {
    if (this.cancelled) return;
    const { name, log } = this.options;
    const label = this.options.label ?? name;
    const { code, signal, reason } = run;
    const { maxCrashes, stableAfterMs } = this.policy;
    const ranMs = Date.now() - run.startedAt;
    this.crashesInARow = ranMs >= stableAfterMs ? 1 : this.crashesInARow + 1;
    const crashes = this.crashesInARow;
    const stableS = Math.round(stableAfterMs / 1000);
    if (crashes >= maxCrashes) {
      this.cancelled = true;
      log.fatal(
        { process: name, code, signal, reason, ranMs, crashes, stableAfterMs, lastOutput: run.lastOutput },
        `${label} crashed ${crashes} times in a row, each within ${stableS} s of starting; giving up and stopping Mailroom`,
      );
      this.options.onGiveUp({ crashes, stableAfterMs, lastOutput: run.lastOutput });
      return;
    }
    const delayMs = Math.min(this.policy.initialDelayMs * 2 ** (crashes - 1), this.policy.maxDelayMs);
    const how = reason ?? `exited unexpectedly (${signal ?? `code ${code}`})`;
    log.error(
      { process: name, code, signal, reason, ranMs, restartInMs: delayMs, crashes, stableAfterMs },
      `${label} ${how}; restarting it in ${delayMs / 1000} s` +
        ` (${crashes} crash${crashes === 1 ? '' : 'es'} in a row; Mailroom stops at ${maxCrashes} without a run of ${stableS} s)`,
    );
    this.restartTimer = setTimeout(restart, delayMs);
  }

  /** No restart from now on (the process is being stopped on purpose). */
  cancel(): void {
    this.cancelled = true;
    clearTimeout(this.restartTimer);
  }

  get isCancelled(): boolean {
    return this.cancelled;
  }
}
