import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

/**
 * The SMTP sink's own process (started by smtpSink.ts): it accepts everything and only counts it,
 * reporting each message to the parent over IPC, and sends the first few messages whole (to check
 * a DKIM signature). Kept out of the benchmark's process so that receiving mail does not hold up
 * the load generator's event loop and inflate the latencies it measures.
 */
let received = 0;
let kept = 0;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  onData(stream, _session, callback) {
    const chunks: Buffer[] = [];
    const keep = kept < 5;
    if (keep) kept++;
    stream.on('data', (c: Buffer) => {
      if (keep) chunks.push(c);
    });
    stream.on('end', () => {
      received++;
      process.send!({ received, ...(keep ? { message: Buffer.concat(chunks).toString('base64') } : {}) });
      callback();
    });
  },
});
server.on('error', () => undefined);
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.server.address() as AddressInfo).port }));
process.on('disconnect', () => server.close(() => process.exit(0)));
