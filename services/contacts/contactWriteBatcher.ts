import type { Orm } from '../../db/orm';
import { contactRepository, type ContactUpsert, type UpsertResult } from '../../db/contacts/contactRepository';

interface PendingWrite {
  projectId: string;
  source: string;
  row: ContactUpsert;
  resolve(result: UpsertResult): void;
  reject(err: unknown): void;
}

/**
 * Coalesces concurrent contact writes (POST /v1/track) into multi-row upserts: while a few
 * statements are in flight, new writes queue, and the next statement takes the whole queue.
 * Planning, round trips and the commit's WAL flush are then shared by many requests, and each
 * request is still answered only once its own row and event are committed.
 *
 * A statement holds each email at most once (so every write keeps its own event); repeats wait
 * for the next round. Whatever the database refuses a batch for (one row breaking the data limits,
 * a value it cannot store, a deadlock), the batch's rows are retried one by one, once each, so
 * that only the write whose row is bad fails. When the database cannot be reached at all, a retry
 * cannot help: every row of the batch fails with that error at once.
 */
export class ContactWriteBatcher {
  private queue: PendingWrite[] = [];
  private inFlight = 0;

  constructor(
    private readonly orm: Orm,
    private readonly options: { maxBatch: number; maxInFlight: number } = { maxBatch: 250, maxInFlight: 4 },
  ) {}

  write(projectId: string, row: ContactUpsert, source: string): Promise<UpsertResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ projectId, source, row, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async flush(batch: PendingWrite[]): Promise<void> {
    const groups = new Map<string, PendingWrite[]>();
    for (const write of batch) {
      const key = `${write.projectId}\u0000${write.source}`;
      groups.set(key, [...(groups.get(key) ?? []), write]);
    }
    await Promise.all([...groups.values()].map((group) => this.flushGroup(group)));
  }

  /** Runs a group (one project, one source) in rounds whose emails are distinct, in arrival order. */
  private async flushGroup(group: PendingWrite[]): Promise<void> {
    let remaining = group;
    while (remaining.length) {
      const seen = new Set<string>();
      const round: PendingWrite[] = [];
      const later: PendingWrite[] = [];
      for (const write of remaining) {
        if (seen.has(write.row.email)) later.push(write);
        else {
          seen.add(write.row.email);
          round.push(write);
        }
      }
      await this.execute(round);
      remaining = later;
    }
  }

  private async execute(round: PendingWrite[]): Promise<void> {
    const { projectId, source } = round[0];
    try {
      const results = await contactRepository.upsertByEmail(
        this.orm.em.fork(),
        projectId,
        round.map((w) => w.row),
        source,
      );
      round.forEach((write, i) => write.resolve(results[i]));
    } catch (err) {
      // A statement fails as a whole and changes nothing, so each row can be tried on its own;
      // a single row is not retried again.
      if (round.length > 1 && !isConnectionFailure(err)) {
        for (const write of round) await this.execute([write]);
        return;
      }
      for (const write of round) write.reject(err);
    }
  }
}

/**
 * Errors saying the database could not be reached or is going away, rather than that it
 * refused the statement: SQLSTATE classes 08 (connection; 08P01 excepted, which is a value the
 * protocol cannot carry), 53 (insufficient resources), 57P (shutdown), 58 (system), socket
 * errors, and the pool's acquire timeout.
 */
function isConnectionFailure(err: unknown): boolean {
  const e = err as { code?: unknown; sqlState?: unknown; name?: unknown; message?: unknown };
  const code = typeof e?.sqlState === 'string' ? e.sqlState : typeof e?.code === 'string' ? e.code : '';
  if (/^[0-9A-Z]{5}$/.test(code))
    return (code.startsWith('08') && code !== '08P01') || code.startsWith('53') || code.startsWith('57P') || code.startsWith('58');
  if (/^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|NOTFOUND|AI_AGAIN)$/.test(code)) return true;
  return (
    e?.name === 'KnexTimeoutError' ||
    /connection terminated|not queryable|timeout acquiring a connection/i.test(typeof e?.message === 'string' ? e.message : '')
  );
}
