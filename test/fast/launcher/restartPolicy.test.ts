import { CrashLoopGuard, DEFAULT_RESTART_POLICY } from '../../../launcher/restartPolicy';
import type { GiveUpSummary } from '../../../launcher/restartPolicy';
import { createLogger } from '../../../lib/logger';

/**
 * The rule `npm start` applies to every part it supervises, driven on a fake clock: a part is
 * restarted with a doubling backoff, and Mailroom stops once it has crashed 5 times in a row
 * without a run of a minute, however long each failing start took.
 */
describe('the restart rule for a supervised part', () => {
  beforeEach(() => jest.useFakeTimers({ now: new Date('2026-11-28T12:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  /** A part that runs `runMs` (as many values as there are runs), then crashes, under the default policy. */
  function superviseRuns(runsMs: number[]) {
    const lines: Array<Record<string, any>> = [];
    const log = createLogger({ level: 'info', name: 'start', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    let gaveUp: GiveUpSummary | undefined;
    const guard = new CrashLoopGuard({ name: 'api', log, onGiveUp: (summary) => (gaveUp = summary) });
    let started = 0;
    const run = () => {
      const runMs = runsMs[started++];
      if (runMs === undefined) return;
      const startedAt = Date.now();
      setTimeout(() => guard.crashed({ code: 1, signal: null, startedAt, lastOutput: [`run ${started} failed`] }, run), runMs);
    };
    run();
    jest.runAllTimers();
    return { lines, gaveUp: () => gaveUp, starts: () => started };
  }

  it('gives up after 5 quick crashes, with the doubling backoff in between', () => {
    const { lines, gaveUp, starts } = superviseRuns([200, 200, 200, 200, 200, 200]);
    expect(lines.filter((l) => l.level === 'error').map((l) => l.restartInMs)).toEqual([1000, 2000, 4000, 8000]);
    expect(starts()).toBe(5);
    expect(gaveUp()).toEqual({ crashes: 5, stableAfterMs: 60_000, lastOutput: ['run 5 failed'] });
    const fatal = lines.find((l) => l.level === 'fatal')!;
    expect(fatal.msg).toBe('api crashed 5 times in a row, each within 60 s of starting; giving up and stopping Mailroom');
  });

  it('gives up on a part that takes 40 s to fail each time, though never 5 crashes fall within a minute', () => {
    const { lines, gaveUp, starts } = superviseRuns(Array.from({ length: 20 }, () => 40_000));
    expect(starts()).toBe(5);
    expect(gaveUp()).toMatchObject({ crashes: 5 });
    expect(lines.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      'api exited unexpectedly (code 1); restarting it in 1 s (1 crash in a row; Mailroom stops at 5 without a run of 60 s)',
      'api exited unexpectedly (code 1); restarting it in 2 s (2 crashes in a row; Mailroom stops at 5 without a run of 60 s)',
      'api exited unexpectedly (code 1); restarting it in 4 s (3 crashes in a row; Mailroom stops at 5 without a run of 60 s)',
      'api exited unexpectedly (code 1); restarting it in 8 s (4 crashes in a row; Mailroom stops at 5 without a run of 60 s)',
    ]);
  });

  it('starts counting again after a run of a minute or more', () => {
    const quick = [200, 200, 200, 200];
    const { lines, gaveUp, starts } = superviseRuns([...quick, DEFAULT_RESTART_POLICY.stableAfterMs, ...quick, 200]);
    // The stable run's crash counts as the first of a new row: the fourth quick one after it is the fifth.
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors.map((l) => l.crashes)).toEqual([1, 2, 3, 4, 1, 2, 3, 4]);
    expect(errors.map((l) => l.restartInMs)).toEqual([1000, 2000, 4000, 8000, 1000, 2000, 4000, 8000]);
    expect(starts()).toBe(9);
    expect(gaveUp()).toMatchObject({ crashes: 5 });
  });

  it('restarts nothing once cancelled (Mailroom is stopping on purpose)', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'info', name: 'start', destination: { write: (line: string) => void lines.push(line) } });
    const guard = new CrashLoopGuard({ name: 'worker', log, onGiveUp: () => undefined });
    const restart = jest.fn();
    guard.crashed({ code: 1, signal: null, startedAt: Date.now(), lastOutput: [] }, restart);
    guard.cancel();
    jest.runAllTimers();
    expect(restart).not.toHaveBeenCalled();
    guard.crashed({ code: 1, signal: null, startedAt: Date.now(), lastOutput: [] }, restart);
    expect(lines).toHaveLength(1);
  });
});
