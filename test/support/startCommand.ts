import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { eventually } from './eventually';

export interface StartedStack {
  child: ChildProcess;
  /** Every line the start command and its children wrote, raw. */
  text: string[];
  /** The JSON ones, parsed. */
  logs: Array<Record<string, any>>;
  exited: Promise<number | null>;
  waitFor(match: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
}

/**
 * `npm start` (scripts/start.ts) as a child process with `env` over this process's environment
 * (a setting given as undefined is removed: e.g. TEMPORAL_ADDRESS, for the embedded Temporal).
 */
export function startStack(env: Record<string, string | undefined>): StartedStack {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) delete merged[key];
    else merged[key] = value;
  }
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text: string[] = [];
  const logs: Array<Record<string, any>> = [];
  const onLine = (line: string) => {
    text.push(line);
    try {
      logs.push(JSON.parse(line));
    } catch {
      // a line for people, not a log line
    }
  };
  readline.createInterface({ input: child.stdout }).on('line', onLine);
  readline.createInterface({ input: child.stderr }).on('line', onLine);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (match: (line: Record<string, any>) => boolean, timeoutMs = 90_000) =>
    eventually(() => logs.find(match) ?? Promise.reject(new Error('not yet')), timeoutMs, 100).catch(() => {
      throw new Error(`no matching log line within ${timeoutMs} ms; last output:\n${text.slice(-40).join('\n')}`);
    });
  return { child, text, logs, exited, waitFor };
}

/** Kills the start command and everything it started that is still there, after a failed test too. */
export function stopStack(stack: StartedStack): void {
  if (stack.child.exitCode === null && stack.child.signalCode === null) stack.child.kill('SIGKILL');
  // Each child leads its own process group (PostgreSQL's backends are in its postmaster's).
  for (const line of stack.logs) {
    if (typeof line.childPid !== 'number') continue;
    for (const target of [-line.childPid, line.childPid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
