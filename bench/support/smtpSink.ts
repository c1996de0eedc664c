import { fork } from 'node:child_process';
import path from 'node:path';

/** What the sink has counted so far (smtpSinkProcess.ts reports it ten times a second). */
export interface SinkCounts {
  received: number;
  distinctRecipients: number;
  /** Messages to a recipient that had received one before. */
  duplicates: number;
  /** Epoch milliseconds of the first and the last message; 0 before any. */
  firstAt: number;
  lastAt: number;
}

/**
 * An SMTP server that accepts everything and only counts it, so that the benchmark measures
 * Mailroom rather than a test server parsing MIME. It keeps the first few messages whole, to check
 * a DKIM signature. It runs as a child process (smtpSinkProcess.ts): in the benchmark's own
 * process it would share an event loop with the load generator.
 */
export async function startSmtpSink() {
  const child = fork(path.join(__dirname, 'smtpSinkProcess.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const counts: SinkCounts = { received: 0, distinctRecipients: 0, duplicates: 0, firstAt: 0, lastAt: 0 };
  const kept: Buffer[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the SMTP sink exited (${code})`)));
    child.on('message', (m: Partial<SinkCounts> & { port?: number; message?: string }) => {
      if (m.port) resolve(m.port);
      if (m.received !== undefined && m.received >= counts.received) Object.assign(counts, m);
      if (m.message) kept.push(Buffer.from(m.message, 'base64'));
    });
  });
  child.removeAllListeners('exit');
  return {
    url: `smtp://127.0.0.1:${port}`,
    get received() {
      return counts.received;
    },
    get counts(): SinkCounts {
      return { ...counts };
    },
    /** From now on, `firstAt` is the first message after this call. */
    markStart: () => new Promise<void>((resolve) => child.send({ mark: true }, () => resolve())),
    /** One of the first messages whose text contains `marker`. */
    sample: (marker: string) => kept.find((m) => m.includes(marker)) ?? null,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}
