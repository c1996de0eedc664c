import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { moduleArgs } from '../../lib/codeLocation';

const root = path.resolve(__dirname, '../..');

export interface ChildService {
  process: ChildProcess;
  lines: Array<Record<string, unknown>>;
  /** Every stdout line as written, JSON or not. */
  stdout: string[];
  /** Resolves with the first JSON log line (seen or coming) that matches. */
  waitForLine(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * The service processes this test file started and that have not exited yet: the test environment
 * (test/support/testEnvironment.cjs) kills what is left when the file ends.
 */
function liveChildren(): Set<ChildProcess> {
  const holder = globalThis as { __mailroomChildProcesses?: Set<ChildProcess> };
  holder.__mailroomChildProcesses ??= new Set();
  return holder.__mailroomChildProcesses;
}

/**
 * Runs `api/main.ts` or `worker/main.ts` as a real child process, as `npm start` does: from the
 * sources through tsx, or (`from: 'dist'`, the benchmarks) the compiled JavaScript `npm start` runs.
 */
export function spawnService(
  entry: 'api/main.ts' | 'worker/main.ts',
  env: Record<string, string>,
  nodeArgs: string[] = [],
  from: 'sources' | 'dist' = 'sources',
): ChildService {
  const child = spawn(process.execPath, [...nodeArgs, ...moduleArgs(entry.replace(/\.ts$/, ''), from)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  liveChildren().add(child);
  child.once('exit', () => liveChildren().delete(child));
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  const stderr: string[] = [];
  const stdout: string[] = [];
  readline.createInterface({ input: child.stdout }).on('line', (text) => {
    stdout.push(text);
    try {
      lines.push(JSON.parse(text));
      waiters.splice(0).forEach((w) => w());
    } catch {
      // not a log line
    }
  });
  readline.createInterface({ input: child.stderr }).on('line', (text) => stderr.push(text));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    process: child,
    lines,
    stdout,
    exited,
    kill: (signal = 'SIGTERM') => void child.kill(signal),
    waitForLine(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching log line within ${timeoutMs} ms; stderr: ${stderr.slice(-20).join('\n')}`)), timeoutMs);
        const check = () => {
          const found = lines.find(match);
          if (found) {
            clearTimeout(timer);
            resolve(found);
          } else waiters.push(check);
        };
        void exited.then((code) => {
          if (!lines.find(match)) {
            clearTimeout(timer);
            reject(
              new Error(
                `${entry} exited (${code}) before the expected log line; stderr: ${stderr.slice(-20).join('\n')}; stdout: ${stdout.slice(-5).join('\n')}`,
              ),
            );
          }
        });
        check();
      });
    },
  };
}

/**
 * How long an API process may take to listen: under load on the 2-core CI machine a start took
 * over 11 s, and processes run 3-10x slower than idle.
 */
const API_START_MS = 120_000;

/** Starts an API process and returns its base URL once it listens (within API_START_MS). */
export async function spawnApi(
  env: Record<string, string>,
  nodeArgs: string[] = [],
  from: 'sources' | 'dist' = 'sources',
): Promise<ChildService & { url: string }> {
  const service = spawnService('api/main.ts', env, nodeArgs, from);
  const line = await service
    .waitForLine((l) => l.msg === 'api listening', API_START_MS)
    .catch((err) => {
      // Never leave a half-started API behind a failed start.
      service.kill('SIGKILL');
      throw err;
    });
  return Object.assign(service, { url: `http://127.0.0.1:${Number(line.port)}` });
}
