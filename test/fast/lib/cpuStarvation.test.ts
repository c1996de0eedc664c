import { watchCpuStarvation, type CpuStarvation, type LoopDelaySamples } from '../../../lib/process/cpuStarvation';

/**
 * A low-priority webhook process waits while other work has the cores (lib/process/cpuStarvation.ts).
 * Starvation shows as late timers. The rules of the wait are checked on scripted delay samples (a
 * loaded test machine makes real timers late too, so "on time" cannot be asserted on a real loop);
 * one test holds the real event loop in bursts and checks that the watch sees it.
 */
let watch: CpuStarvation | undefined;
let hogging = false;

afterEach(() => {
  hogging = false;
  watch?.close();
  watch = undefined;
});

/** Delay samples that read, look after look, the given mean delays (ms); `undefined` is a look with no sample. */
function scriptedSamples(meansMs: Array<number | undefined>): LoopDelaySamples & { looks: number } {
  let look = 0;
  return {
    get looks() {
      return look;
    },
    get count() {
      return meansMs[look] === undefined ? 0 : 10;
    },
    get mean() {
      return (meansMs[look] ?? 0) * 1e6;
    },
    reset() {
      look += 1;
    },
  };
}

it('does not wait while timers fire on time', async () => {
  watch = watchCpuStarvation({ thresholdMs: 20, stepMs: 1, samples: scriptedSamples([3]) });
  expect(await watch.yieldWhileStarved()).toBe(0);
});

it('waits in steps while timers fire late and stops once they are on time again', async () => {
  const samples = scriptedSamples([35, 40, 30, 5, 45]);
  watch = watchCpuStarvation({ thresholdMs: 20, maxWaitMs: 1000, stepMs: 2, samples });
  expect(await watch.yieldWhileStarved()).toBe(6);
  // The look that ended the wait is spent; the next call starts from fresh samples.
  expect(await watch.yieldWhileStarved()).toBe(2);
});

it('waits at most maxWaitMs however late the timers stay', async () => {
  watch = watchCpuStarvation({ thresholdMs: 20, maxWaitMs: 10, stepMs: 2, samples: scriptedSamples(Array(100).fill(80)) });
  expect(await watch.yieldWhileStarved()).toBe(10);
});

it('does not wait on a look with no sample', async () => {
  watch = watchCpuStarvation({ thresholdMs: 20, stepMs: 2, samples: scriptedSamples([undefined, 80]) });
  expect(await watch.yieldWhileStarved()).toBe(0);
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

it('sees the real event loop held: waits, and no longer than maxWaitMs', async () => {
  watch = watchCpuStarvation({ thresholdMs: 20, maxWaitMs: 400, stepMs: 50 });
  holdTheLoop(40);
  await settle(200);
  const waited = await watch.yieldWhileStarved();
  expect(waited).toBeGreaterThan(0);
  expect(waited).toBeLessThanOrEqual(400);
});
