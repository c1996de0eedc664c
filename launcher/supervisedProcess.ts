import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import type { Logger } from '../lib/logger';
import { hasExited, stopChildProcess } from './childProcess';
import { CrashLoopGuard } from './restartPolicy';
import type { GiveUpSummary, RestartPolicy } from './restartPolicy';

/** Lines of a child's output kept for the message that explains why the supervisor gave up. */
const OUTPUT_LINES_KEPT = 50;
/** After a child exits, how long to wait for the rest of its output before moving on. */
const OUTPUT_FLUSH_WAIT_MS = 2000;

export interface SupervisedProcessOptions {
  name: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  log: Logger;
  policy?: RestartPolicy;
  /** Every line the child writes, after it has been passed through to our own stdout/stderr. */
  onLine?: (line: string) => void;
  /** Called once the child has crashed `maxCrashes` times in a row without a stable run; it is not restarted again. */
  onGiveUp: (summary: GiveUpSummary) => void;
}

/**
 * Runs a Node child process and keeps it running: its output goes through to ours (and its last
 * lines are kept), an exit we did not ask for is a crash and the child is started again after a
 * backoff, with the same environment; after too many crashes in a short time it gives up.
 */
export class SupervisedProcess {
  private child: ChildProcess | undefined;
  private closed: Promise<void> = Promise.resolve();
  private startedAt = 0;
  private readonly output: string[] = [];
  private readonly restarts: CrashLoopGuard;

  constructor(private readonly options: SupervisedProcessOptions) {
    const { name, log, policy, onGiveUp } = options;
    this.restarts = new CrashLoopGuard({ name, log, policy, onGiveUp });
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child && !hasExited(this.child) ? this.child.pid : undefined;
  }

  /** The child's last lines of output (stdout and stderr, in the order they came). */
  lastOutput(): string[] {
    return [...this.output];
  }

  start(): void {
    if (this.restarts.isCancelled) return;
    const { name, args, cwd, env, log } = this.options;
    // Own process group: a terminal Ctrl-C reaches only the start command, which decides the order things stop in.
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    this.startedAt = Date.now();
    const streamsDone = [this.passThrough(child.stdout, process.stdout), this.passThrough(child.stderr, process.stderr)];
    this.closed = Promise.all(streamsDone).then(() => undefined);
    let exited = false;
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (exited) return;
      exited = true;
      void this.afterExit(child, code, signal);
    };
    child.once('exit', onExit);
    child.on('error', (err) => {
      if (child.pid !== undefined) return; // a failed kill; 'exit' covers the rest
      this.remember(`could not start ${name}: ${err.message}`);
      onExit(null, null);
    });
    if (child.pid !== undefined) log.info({ process: name, childPid: child.pid }, `${name} started (pid ${child.pid})`);
  }

  /** Stops the child (`signal`, SIGTERM by default, then SIGKILL after `graceMs`) and does not restart it. */
  async stop(graceMs: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    this.restarts.cancel();
    const child = this.child;
    if (!child) return;
    if (await stopChildProcess(child, { graceMs, signal })) {
      this.options.log.warn({ process: this.name, graceMs }, `${this.name} did not stop in time; it was killed`);
    }
    await this.outputFlushed();
  }

  /** Immediate SIGKILL, for a forced exit. */
  kill(): void {
    this.restarts.cancel();
    if (this.child && !hasExited(this.child)) this.child.kill('SIGKILL');
  }

  private passThrough(from: NodeJS.ReadableStream, to: NodeJS.WriteStream): Promise<void> {
    return new Promise((resolve) => {
      const lines = readline.createInterface({ input: from, crlfDelay: Infinity });
      lines.on('line', (line) => {
        to.write(line + '\n');
        this.remember(line);
        this.options.onLine?.(line);
      });
      lines.once('close', () => resolve());
    });
  }

  private remember(line: string): void {
    this.output.push(line);
    if (this.output.length > OUTPUT_LINES_KEPT) this.output.splice(0, this.output.length - OUTPUT_LINES_KEPT);
  }

  private async outputFlushed(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.closed, new Promise((resolve) => (timer = setTimeout(resolve, OUTPUT_FLUSH_WAIT_MS)))]);
    clearTimeout(timer);
  }

  private async afterExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const { name, log } = this.options;
    if (this.restarts.isCancelled) {
      log.info({ process: name, code, signal }, `${name} stopped`);
      return;
    }
    // Its last words first, so the give-up message can quote them.
    await this.outputFlushed();
    if (child !== this.child) return;
    this.restarts.crashed({ code, signal, startedAt: this.startedAt, lastOutput: this.lastOutput() }, () => this.start());
  }
}
