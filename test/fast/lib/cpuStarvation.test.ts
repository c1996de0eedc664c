import { watchCpuStarvation, type CpuStarvation } from '../../../lib/process/cpuStarvation';

/**
 * A low-priority webhook process waits while other work has the cores (lib/process/cpuStarvation.ts).
 * Starvation shows as late timers; here something in the process itself holds the event loop in
 * bursts, which makes the timers just as late.
 */
let watch: CpuStarvation;
let hogging = false;

afterEach(() => {
  hogging = false;
  watch?.close();
});

/** Holds the event loop `busyMs` at a time with a moment's break, as a busier process holding the core would. */
function holdTheLoop(busyMs: number): void {
  hogging = true;
  const hold = () => {
    if (!hogging) return;
    const until = Date.now() + busyMs;
    while (Date.now() < until);
    setTimeout(hold, 1);
  };
  setTimeout(hold, 1);
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('does not wait while timers fire on time', async () => {
  watch = watchCpuStarvation({ thresholdMs: 20, maxWaitMs: 1000, stepMs: 50 });
  await settle(100);
  expect(await watch.yieldWhileStarved()).toBe(0);
});

it('waits while timers fire late, at most maxWaitMs, and stops waiting once they are on time again', async () => {
  watch = watchCpuStarvation({ thresholdMs: 20, maxWaitMs: 400, stepMs: 50 });
  holdTheLoop(40);
  await settle(200);
  expect(await watch.yieldWhileStarved()).toBe(400);

  hogging = false;
  await settle(100);
  expect(await watch.yieldWhileStarved()).toBe(0);
});
