import fs from 'node:fs';
import path from 'node:path';

const EXIT_WAIT_MS = 5000;
const EXIT_POLL_MS = 50;

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The PostgreSQL processes (on Linux, from /proc) whose working directory is the cluster `dataDir`. */
function serverProcessesIn(dataDir: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Every server process runs in its data directory; the program name keeps a shell that
      // happens to be there out of it.
      if (fs.readlinkSync(`/proc/${entry}/cwd`) !== dataDir) continue;
      if (path.basename(fs.readlinkSync(`/proc/${entry}/exe`)).replace(/ \(deleted\)$/, '') !== 'postgres') continue;
      found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to look at
    }
  }
  return found;
}

/**
 * Before a start: when the cluster's postmaster.pid names a postmaster that is no longer running
 * (it was killed with SIGKILL, or by the OOM killer), stops what it left behind and returns their
 * process ids. Its backends and auxiliary processes outlive it (each in a session of its own) and
 * stay attached to its shared memory: an idle one notices the postmaster is gone and exits, but
 * one busy with a query carries on, and meanwhile every start fails with "pre-existing shared
 * memory block is still in use". Without their postmaster they can only be killed; the start
 * then recovers from the WAL as after any crash. A postmaster that still runs is left alone
 * (postgres itself then refuses to start, saying so). Linux only (/proc); elsewhere a start
 * fails until those processes have gone by themselves.
 */
export async function stopLeftoversOfDeadServer(dataDir: string): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  let postmasterPid: number;
  try {
    postmasterPid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return []; // a clean stop removes it
  }
  if (!Number.isInteger(postmasterPid) || postmasterPid <= 0 || isRunning(postmasterPid)) return [];

  const realDir = fs.realpathSync(dataDir);
  const leftovers = serverProcessesIn(realDir);
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Killed processes detach from the shared memory as they exit; a zombie left to a parent that
  // does not reap no longer counts (and has no working directory to find it by).
  const deadline = Date.now() + EXIT_WAIT_MS;
  while (Date.now() < deadline && serverProcessesIn(realDir).some((pid) => leftovers.includes(pid))) {
    await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
  }
  return leftovers;
}
