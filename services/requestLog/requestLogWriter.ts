import type { Orm } from '../../db/orm';
import type { Logger } from '../../lib/logger';
import { requestLogRepository, type RequestLogEntry } from '../../db/requestLog/requestLogRepository';

export interface RequestLogWriterOptions {
  /** How long a recorded request waits at most before its batch is written. */
  flushIntervalMs: number;
  /** Rows per insert statement; a full batch is written at once, without waiting for the interval. */
  maxBatch: number;
  /** Rows held while the database is slow or away; beyond it, new rows are dropped and counted. */
  maxBuffered: number;
}

export const REQUEST_LOG_DEFAULTS: RequestLogWriterOptions = { flushIntervalMs: 1000, maxBatch: 1000, maxBuffered: 20_000 };

/** How often, at most, a warning about dropped rows is logged. */
const DROP_WARNING_INTERVAL_MS = 10_000;

/**
 * The request log's writer (GET /requests), one per API process. A request only pushes its row
 * into an in-memory buffer (`record`, no I/O, no await); the buffer is written by one multi-row
 * insert a second after its first row, or as soon as it holds `maxBatch` rows, with at most one
 * insert in flight. So the request path never waits for the log, and a busy API writes one
 * statement per second (or per thousand requests) instead of one per request.
 *
 * The buffer is bounded: while the database is slow or away, rows beyond `maxBuffered` are dropped
 * and counted (`stats().dropped`, and a warning at most every 10 s), and a batch the database
 * refuses is dropped and counted too. The log is a convenience for developers, never a reason to
 * slow down or fail a request. `close()` writes what is left (the API's shutdown calls it once the
 * last request was answered).
 */
export class RequestLogWriter {
  private buffer: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private written = 0;
  private dropped = 0;
  private droppedSinceWarning = 0;
  private lastWarning = 0;
  private closed = false;

  constructor(
    private readonly orm: Orm,
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly options: RequestLogWriterOptions = REQUEST_LOG_DEFAULTS,
  ) {}

  /** Called on the request path: buffers the row, never waits and never throws. */
  record(entry: RequestLogEntry): void {
    if (this.closed || this.buffer.length >= this.options.maxBuffered) {
      this.drop(1);
      return;
    }
    this.buffer.push(entry);
    if (this.flushing) return; // the running flush takes it, or schedules the next one
    if (this.buffer.length >= this.options.maxBatch) this.startFlush();
    else this.timer ??= setTimeout(() => this.startFlush(), this.options.flushIntervalMs).unref();
  }

  /** Rows written, dropped (buffer full or a refused batch) and waiting, since the process started. */
  stats(): { written: number; dropped: number; buffered: number } {
    return { written: this.written, dropped: this.dropped, buffered: this.buffer.length };
  }

  /** Writes everything buffered now, and waits for it (tests; the shutdown). */
  async flush(): Promise<void> {
    while (this.flushing || this.buffer.length) {
      if (!this.flushing) this.startFlush();
      await this.flushing;
    }
  }

  /** Writes what is left; rows recorded afterwards are dropped. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private startFlush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.flushing || !this.buffer.length) return;
    this.flushing = this.writeBuffered().finally(() => {
      this.flushing = undefined;
      // What arrived meanwhile: a full batch goes at once, a partial one after the interval.
      if (this.buffer.length >= this.options.maxBatch) this.startFlush();
      else if (this.buffer.length && !this.closed) this.timer ??= setTimeout(() => this.startFlush(), this.options.flushIntervalMs).unref();
    });
  }

  private async writeBuffered(): Promise<void> {
    const batch = this.buffer.splice(0, this.options.maxBatch);
    try {
      this.written += await requestLogRepository.insertMany(this.orm.em.fork(), batch);
    } catch (err) {
      this.drop(batch.length, err);
    }
  }

  private drop(rows: number, err?: unknown): void {
    this.dropped += rows;
    this.droppedSinceWarning += rows;
    const now = Date.now();
    if (now - this.lastWarning < DROP_WARNING_INTERVAL_MS && !err) return;
    this.logger.warn(
      { event: 'requestLog.dropped', rows: this.droppedSinceWarning, droppedTotal: this.dropped, ...(err ? { err } : {}) },
      'request log: rows dropped (the database is slow or away)',
    );
    this.droppedSinceWarning = 0;
    this.lastWarning = now;
  }
}
