import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

/**
 * An SMTP server that accepts everything and only counts it, so that the benchmark measures
 * Mailroom rather than a test server parsing MIME. It keeps the first few messages whole, to check
 * a DKIM signature.
 */
export async function startSmtpSink() {
  let received = 0;
  const kept: Buffer[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      const keep = kept.length < 5;
      stream.on('data', (c: Buffer) => {
        if (keep) chunks.push(c);
      });
      stream.on('end', () => {
        received++;
        if (keep && kept.length < 5) kept.push(Buffer.concat(chunks));
        callback();
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    get received() {
      return received;
    },
    /** One of the first messages whose text contains `marker`. */
    sample: (marker: string) => kept.find((m) => m.includes(marker)) ?? null,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
