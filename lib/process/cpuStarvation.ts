import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Tells a low-priority process (a nice-19 webhook worker) that the machine's cores are busy with
 * more important work, and waits it out. Such a process runs only in the gaps the others leave, so
 * its own timers fire late: when the event loop's delay, sampled every few milliseconds, averages
 * more than `thresholdMs`, the cores are taken. `yieldWhileStarved` then waits in short steps until
 * the delay falls (at most `maxWaitMs`, so the work still moves, however slowly). Waiting, the
 * process also stops asking PostgreSQL for work, whose backends run at normal priority: that is
 * the part niceness alone cannot defer.
 */
export interface CpuStarvation {
  /** Resolves once the process gets the CPU again, or after maxWaitMs; answers how long it waited. */
  yieldWhileStarved(): Promise<number>;
  close(): void;
}

/** What the watch reads of the event loop's delay: node's IntervalHistogram has this shape. */
export interface LoopDelaySamples {
  readonly count: number;
  /** Nanoseconds. */
  readonly mean: number;
  reset(): void;
}

export interface CpuStarvationOptions {
  thresholdMs?: number;
  maxWaitMs?: number;
  stepMs?: number;
  /** Where the delay samples come from; the process's own event loop unless a test scripts them. */
  samples?: LoopDelaySamples;
}

export function watchCpuStarvation(options: CpuStarvationOptions = {}): CpuStarvation {
  const thresholdNs = (options.thresholdMs ?? 8) * 1e6;
  const maxWaitMs = options.maxWaitMs ?? 1000;
  const stepMs = options.stepMs ?? 50;
  const monitor = options.samples ? undefined : monitorEventLoopDelay({ resolution: 5 });
  monitor?.enable();
  const delay: LoopDelaySamples = options.samples ?? monitor!;
  return {
    async yieldWhileStarved() {
      let waited = 0;
      // The first look covers the process's own work too (a slow callback of its own looks the same);
      // each look after a step covers nothing but waiting for a core.
      while (delay.count > 0 && delay.mean > thresholdNs && waited < maxWaitMs) {
        delay.reset();
        await sleep(stepMs);
        waited += stepMs;
      }
      delay.reset();
      return waited;
    },
    close: () => monitor?.disable(),
  };
}
