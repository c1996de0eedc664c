import type { ChildProcess } from 'node:child_process';

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves with how the child ended; create it right after spawning, before the exit can pass unseen. */
export function exitOf(child: ChildProcess): Promise<ProcessExit> {
  if (hasExited(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    // Never started (e.g. ENOENT): no 'exit' comes.
    child.once('error', () => {
      if (child.pid === undefined) resolve({ code: null, signal: null });
    });
  });
}

export function waitForExit(child: ChildProcess): Promise<void> {
  if (hasExited(child)) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Asks a child process to stop with `signal`, gives it `graceMs`, then sends `forceSignal`.
 * Resolves once it has exited; true when it had to be forced. A child that never started or
 * already exited resolves at once.
 */
export async function stopChildProcess(
  child: ChildProcess,
  options: { graceMs: number; signal?: NodeJS.Signals; forceSignal?: NodeJS.Signals },
): Promise<boolean> {
  if (child.pid === undefined || hasExited(child)) return false;
  const exited = waitForExit(child);
  child.kill(options.signal ?? 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const forced = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), options.graceMs);
    }),
  ]);
  clearTimeout(timer);
  if (forced) {
    child.kill(options.forceSignal ?? 'SIGKILL');
    await exited;
  }
  return forced;
}
