import type { Logger } from '../lib/logger';
import type { ProcessExit } from './childProcess';
import { CrashLoopGuard } from './restartPolicy';
import type { GiveUpSummary, RestartPolicy } from './restartPolicy';

/** A server `npm start` runs for Mailroom (the embedded PostgreSQL, the Temporal dev server). */
export interface RunningServer {
  pid: number;
  exited: Promise<ProcessExit>;
  outputTail: () => string;
  stop: () => Promise<void>;
}

export interface SupervisedDependencyOptions<T extends RunningServer> {
  /** The `process` field of its log lines, e.g. `temporal`. */
  name: string;
  /** What the messages call it, e.g. `Temporal dev server`. */
  label: string;
  log: Logger;
  /** Starts the server, on the same data and port every time, resolving once it serves. */
  start: () => Promise<T>;
  policy?: RestartPolicy;
  onGiveUp: (summary: GiveUpSummary) => void;
}

/** Lines of the server's output quoted when the supervisor gives up on it. */
const OUTPUT_LINES_KEPT = 50;

function lastLines(text: string): string[] {
  return text.trimEnd().split(/\r?\n/).slice(-OUTPUT_LINES_KEPT);
}

/**
 * Keeps a server running that `start` starts (always on the same data and port, so the API and
 * the worker find it again at the address they have): an exit that stop() did not ask for is a
 * crash, and it is started again under the same rule as the API and the worker (CrashLoopGuard).
 * A restart that fails to start counts as one more crash.
 */
export class SupervisedDependency<T extends RunningServer> {
  private current: T | undefined;
  private restarting: Promise<void> | undefined;
  private readonly restarts: CrashLoopGuard;

  constructor(private readonly options: SupervisedDependencyOptions<T>) {
    const { name, label, log, policy, onGiveUp } = options;
    this.restarts = new CrashLoopGuard({ name, label, log, policy, onGiveUp });
  }

  /** The first start; its failure is the caller's (Mailroom does not start), not a crash. */
  async start(): Promise<T> {
    const server = await this.options.start();
    this.watch(server, Date.now());
    return server;
  }

  /** The server's process id now (it changes with each restart); undefined between a crash and its restart. */
  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** No restart from now on: Mailroom is shutting down, and a server that dies now stays down. */
  endSupervision(): void {
    this.restarts.cancel();
  }

  /** Stops the server without restarting it, waiting for a restart under way to finish first. */
  async stop(): Promise<void> {
    this.restarts.cancel();
    await this.restarting;
    await this.current?.stop();
  }

  private watch(server: T, startedAt: number): void {
    this.current = server;
    void server.exited.then(({ code, signal }) => {
      if (this.restarts.isCancelled || this.current !== server) return;
      this.current = undefined;
      this.restarts.crashed({ code, signal, startedAt, lastOutput: lastLines(server.outputTail()) }, () => this.restart());
    });
  }

  private restart(): void {
    const { name, label, log } = this.options;
    const startedAt = Date.now();
    log.info({ process: name }, `restarting ${label}`);
    this.restarting = this.options.start().then(
      (server) => {
        if (this.restarts.isCancelled) {
          // Shutdown began while it was starting: it stops with the rest.
          this.current = server;
          return;
        }
        log.info({ process: name, childPid: server.pid }, `${label} is back (pid ${server.pid})`);
        this.watch(server, startedAt);
      },
      (err: unknown) => {
        const message = err instanceof Error ? err.message : String(err);
        const [reason, ...output] = message.split('\n');
        this.restarts.crashed({ code: null, signal: null, startedAt, reason: `could not be restarted: ${reason}`, lastOutput: output }, () => this.restart());
      },
    );
  }
}
