import { fork } from 'node:child_process';
import path from 'node:path';

/**
 * An SMTP server that accepts everything and only counts it, so that the benchmark measures
 * Mailroom rather than a test server parsing MIME. It keeps the first few messages whole, to check
 * a DKIM signature. It runs as a child process (smtpSinkProcess.ts): in the benchmark's own
 * process it would share an event loop with the load generator.
 */
export async function startSmtpSink() {
  const child = fork(path.join(__dirname, 'smtpSinkProcess.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let received = 0;
  const kept: Buffer[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the SMTP sink exited (${code})`)));
    child.on('message', (m: { port?: number; received?: number; message?: string }) => {
      if (m.port) resolve(m.port);
      if (m.received !== undefined) received = Math.max(received, m.received);
      if (m.message) kept.push(Buffer.from(m.message, 'base64'));
    });
  });
  child.removeAllListeners('exit');
  return {
    url: `smtp://127.0.0.1:${port}`,
    get received() {
      return received;
    },
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
