/**
 * CPU time by process kind over a span of a benchmark, read from /proc (Linux): where the
 * machine's two cores went, not only the worker's share. PostgreSQL's backends, the Temporal dev
 * server, the sink and the benchmark itself are separate processes, so a per-mail figure for
 * each says which one a target is waiting on.
 */
import fs from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux this runs on

type Kind = 'worker' | 'webhooks' | 'api' | 'postgres' | 'temporal' | 'sink' | 'bench' | 'browser' | 'other';

/** Processes whose command line does not tell their kind (a `webhooks` worker runs worker/main too). */
const labelled = new Map<string, Kind>();

/** Counts the process as `kind` in every later snapshot. */
export function labelProcess(pid: number, kind: Kind): void {
  labelled.set(String(pid), kind);
}

function kindOf(commandLine: string): Kind {
  if (/postgres|postmaster/.test(commandLine)) return 'postgres';
  if (/temporal/.test(commandLine) && /server/.test(commandLine)) return 'temporal';
  if (/worker\/main/.test(commandLine)) return 'worker';
  if (/api\/main/.test(commandLine)) return 'api';
  if (/smtpSink/.test(commandLine)) return 'sink';
  if (/chrom(e|ium)/.test(commandLine)) return 'browser';
  if (/bench\//.test(commandLine)) return 'bench';
  return 'other';
}

export interface CpuSnapshot {
  byPid: Map<string, { kind: Kind; seconds: number; command: string }>;
  /** All CPUs, in seconds: busy and idle. */
  machine: { busy: number; idle: number };
}

/** A process's CPU so far (user and system, all its threads), in milliseconds; throws when it has ended. */
export function processCpuMs(pid: number | string): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

export function cpuSnapshot(): CpuSnapshot {
  const byPid = new Map<string, { kind: Kind; seconds: number; command: string }>();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const seconds = processCpuMs(pid) / 1000;
      const commandLine = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      byPid.set(pid, { kind: labelled.get(pid) ?? kindOf(commandLine), seconds, command: commandLine.trim() });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = (cpu[3] + cpu[4]) / TICKS_PER_SECOND;
  const all = cpu.reduce((a, b) => a + b, 0) / TICKS_PER_SECOND;
  return { byPid, machine: { busy: all - idle, idle } };
}

/** CPU milliseconds by process kind between two snapshots (the busiest first), and the machine's idle share: one line of a timeline. */
export function cpuLine(from: CpuSnapshot, to: CpuSnapshot): string {
  const ms = new Map<Kind, number>();
  for (const [pid, now] of to.byPid) ms.set(now.kind, (ms.get(now.kind) ?? 0) + (now.seconds - (from.byPid.get(pid)?.seconds ?? 0)) * 1000);
  const busy = to.machine.busy - from.machine.busy;
  const idle = to.machine.idle - from.machine.idle;
  const parts = [...ms].filter(([, v]) => v >= 10).sort((a, b) => b[1] - a[1]);
  return `${parts.map(([kind, v]) => `${kind} ${Math.round(v)}`).join(', ')} ms; idle ${Math.round((100 * idle) / Math.max(0.001, busy + idle))} %`;
}

/** CPU milliseconds per unit of work (a mail) by process kind between two snapshots, and the machine's idle share. */
export function cpuPerUnit(from: CpuSnapshot, to: CpuSnapshot, units: number): Record<string, string> {
  const seconds = new Map<Kind, number>();
  for (const [pid, now] of to.byPid) {
    const before = from.byPid.get(pid)?.seconds ?? 0; // a process started in between counts from zero
    seconds.set(now.kind, (seconds.get(now.kind) ?? 0) + now.seconds - before);
  }
  const busy = to.machine.busy - from.machine.busy;
  const idle = to.machine.idle - from.machine.idle;
  const figures: Record<string, string> = {};
  for (const [kind, s] of [...seconds].sort((a, b) => b[1] - a[1])) {
    if (s >= 0.01) figures[`CPU per mail, ${kind} (ms)`] = ((s * 1000) / units).toFixed(3);
  }
  figures['CPU per mail, all processes (ms)'] = ((busy * 1000) / units).toFixed(3);
  figures['machine idle during the span'] = `${Math.round((100 * idle) / (busy + idle))} %`;
  return figures;
}

/**
 * CPU seconds by process kind between two snapshots, busiest first; the three busiest commands of
 * kind "other" (what else ran on the machine: another tool, a build), by their first 60 characters;
 * the machine's busy and idle seconds.
 */
export function cpuByKind(
  from: CpuSnapshot,
  to: CpuSnapshot,
): { byKind: Array<[string, number]>; topOther: Array<[string, number]>; busy: number; idle: number } {
  const seconds = new Map<Kind, number>();
  const other = new Map<string, number>();
  for (const [pid, now] of to.byPid) {
    const used = now.seconds - (from.byPid.get(pid)?.seconds ?? 0); // a process started in between counts from zero
    seconds.set(now.kind, (seconds.get(now.kind) ?? 0) + used);
    const command = now.command.slice(0, 60);
    if (now.kind === 'other') other.set(command, (other.get(command) ?? 0) + used);
  }
  return {
    byKind: [...seconds].filter(([, s]) => s >= 0.01).sort((a, b) => b[1] - a[1]),
    topOther: [...other]
      .filter(([, s]) => s >= 0.01)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3),
    busy: to.machine.busy - from.machine.busy,
    idle: to.machine.idle - from.machine.idle,
  };
}
