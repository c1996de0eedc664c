import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

/**
 * The SMTP sink's own process (started by smtpSink.ts): it accepts everything and only counts it,
 * and sends the first few messages whole (to check a DKIM signature). Kept out of the
 * benchmark's process so that receiving mail does not hold up the load generator's event loop
 * and inflate the latencies it measures. Counts go to the parent ten times a second: the
 * messages, the distinct recipients (a recipient seen again is a duplicate), and when the first
 * and the last message arrived.
 */
let received = 0;
let duplicates = 0;
let firstAt = 0;
let lastAt = 0;
let kept = 0;
let reported = -1;
const recipients = new Set<string>();
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  onData(stream, session, callback) {
    const chunks: Buffer[] = [];
    const keep = kept < 5;
    if (keep) kept++;
    stream.on('data', (c: Buffer) => {
      if (keep) chunks.push(c);
    });
    stream.on('end', () => {
      received++;
      lastAt = Date.now();
      firstAt ||= lastAt;
      for (const { address } of session.envelope.rcptTo) {
        if (recipients.has(address)) duplicates++;
        else recipients.add(address);
      }
      if (keep) process.send!({ message: Buffer.concat(chunks).toString('base64') });
      callback();
    });
  },
});

function report() {
  if (received === reported) return;
  reported = received;
  process.send!({ received, distinctRecipients: recipients.size, duplicates, firstAt, lastAt });
}

const reporting = setInterval(report, 100);
server.on('error', () => undefined);
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.server.address() as AddressInfo).port }));
// The parent marks where its measurement starts: the first message after it sets firstAt anew.
process.on('message', (m: { mark?: boolean }) => {
  if (m.mark) firstAt = 0;
});
process.on('disconnect', () => {
  clearInterval(reporting);
  server.close(() => process.exit(0));
});
