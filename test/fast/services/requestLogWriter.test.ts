import { RequestLogWriter } from '../../../services/requestLog/requestLogWriter';
import type { RequestLogEntry } from '../../../db/requestLog/requestLogRepository';
import type { Orm } from '../../../db/orm';

/**
 * The request log's writer (services/requestLog/requestLogWriter.ts): a request only buffers its
 * row; rows go to the database in multi-row statements, one in flight, a second after the first
 * row or at once when a batch is full; a slow database makes it drop and count, never wait.
 */

function entry(n: number): RequestLogEntry {
  return {
    projectId: 'p',
    at: new Date(),
    method: 'POST',
    path: '/v1/track',
    route: '/v1/track',
    status: 200,
    durationMs: n,
    auth: 'public',
    requestId: `r${n}`,
  };
}

/** A database whose statements the test settles: each insert waits for `release`. */
function fakeDatabase(mode: 'answers' | 'hangs' | 'fails') {
  const statements: number[] = [];
  const pending: Array<() => void> = [];
  const orm = {
    em: {
      fork: () => ({
        execute: (_sql: string, params: unknown[]) => {
          const rows = (JSON.parse(params[0] as string) as unknown[]).length;
          statements.push(rows);
          if (mode === 'fails') return Promise.reject(new Error('connection refused'));
          if (mode === 'hangs') return new Promise((resolve) => pending.push(() => resolve([{ n: rows }])));
          return Promise.resolve([{ n: rows }]);
        },
      }),
    },
  } as unknown as Orm;
  return { orm, statements, release: () => pending.splice(0).forEach((r) => r()) };
}

function recordingLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  return { warnings, warn: (fields: Record<string, unknown>) => void warnings.push(fields) };
}

afterEach(() => jest.useRealTimers());

it('writes what arrives within the interval as one statement, and a full batch at once', async () => {
  jest.useFakeTimers();
  const db = fakeDatabase('answers');
  const writer = new RequestLogWriter(db.orm, recordingLogger(), { flushIntervalMs: 1000, maxBatch: 100, maxBuffered: 1000 });
  for (let n = 0; n < 30; n++) writer.record(entry(n));
  expect(db.statements).toEqual([]);
  await jest.advanceTimersByTimeAsync(999);
  expect(db.statements).toEqual([]);
  await jest.advanceTimersByTimeAsync(1);
  expect(db.statements).toEqual([30]);

  for (let n = 0; n < 250; n++) writer.record(entry(n));
  await jest.advanceTimersByTimeAsync(0);
  // 100 at once when the batch filled; the next full 100 as soon as that statement ended; 50 after the interval.
  expect(db.statements).toEqual([30, 100, 100]);
  await jest.advanceTimersByTimeAsync(1000);
  expect(db.statements).toEqual([30, 100, 100, 50]);
  expect(writer.stats()).toEqual({ written: 280, dropped: 0, buffered: 0 });
});

it('keeps one statement in flight, holds at most maxBuffered rows while the database is slow, and drops and counts the rest', async () => {
  const db = fakeDatabase('hangs');
  const logger = recordingLogger();
  const writer = new RequestLogWriter(db.orm, logger, { flushIntervalMs: 1000, maxBatch: 2, maxBuffered: 5 });
  for (let n = 0; n < 12; n++) writer.record(entry(n));
  // Two rows in the statement that hangs, five waiting, five dropped: recording never waited.
  expect(db.statements).toEqual([2]);
  expect(writer.stats()).toEqual({ written: 0, dropped: 5, buffered: 5 });
  expect(logger.warnings).toHaveLength(1);
  expect(logger.warnings[0]).toMatchObject({ event: 'requestLog.dropped' });

  const closed = writer.close();
  for (let i = 0; i < 10 && db.statements.length < 4; i++) {
    db.release();
    await new Promise((r) => setImmediate(r));
  }
  db.release();
  await closed;
  expect(db.statements).toEqual([2, 2, 2, 1]);
  expect(writer.stats()).toEqual({ written: 7, dropped: 5, buffered: 0 });
  // Closed: a late row is dropped, not written.
  writer.record(entry(99));
  expect(writer.stats().dropped).toBe(6);
});

it('drops and counts a batch the database refuses, and goes on', async () => {
  const db = fakeDatabase('fails');
  const logger = recordingLogger();
  const writer = new RequestLogWriter(db.orm, logger, { flushIntervalMs: 1000, maxBatch: 3, maxBuffered: 100 });
  for (let n = 0; n < 4; n++) writer.record(entry(n));
  await writer.flush();
  expect(db.statements).toEqual([3, 1]);
  expect(writer.stats()).toEqual({ written: 0, dropped: 4, buffered: 0 });
  expect(logger.warnings.length).toBeGreaterThanOrEqual(1);
  expect(logger.warnings[0].err).toBeInstanceOf(Error);
});
