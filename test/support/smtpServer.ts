import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { AddressInfo } from 'node:net';

export interface ReceivedMail {
  /** SMTP MAIL FROM (the return path); empty for a null sender. */
  envelopeFrom: string;
  envelopeTo: string[];
  raw: string;
  parsed: ParsedMail;
}

export interface TestSmtpServer {
  url: string;
  messages: ReceivedMail[];
  /** Messages whose data was received and refused with a 550 (`rejectDataTo`), not in `messages`. */
  refused: ReceivedMail[];
  /** Resolves with the first message (already received or arriving within the timeout) that matches. */
  waitFor(match: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  /** The next `times` deliveries to `address` get a temporary 451 at RCPT TO. */
  failTemporarily(address: string, times: number): void;
  /** While true, every recipient gets a temporary 451 (a relay that is down for maintenance). */
  refuseAll(refuse: boolean): void;
  /** Answers each message's end of data this much later (a slow relay). */
  slowDown(ms: number): void;
  close(): Promise<void>;
}

/**
 * A real SMTP server on a free loopback port that keeps what it receives. Recipients listed in
 * `rejectRecipients` get a permanent 550 at RCPT TO, to exercise hard failures; a message to one
 * listed in `rejectDataTo` is taken whole and refused with a 550 at the end of its data.
 */
export async function startSmtpServer(options: { rejectRecipients?: string[]; rejectDataTo?: string[] } = {}): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const refused: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  const temporaryFailures = new Map<string, number>();
  let refusingAll = false;
  let answerDelayMs = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const left = temporaryFailures.get(address.address.toLowerCase()) ?? 0;
      if (refusingAll || left > 0) {
        if (left > 0) temporaryFailures.set(address.address.toLowerCase(), left - 1);
        const err = new Error('Try again later') as Error & { responseCode: number };
        err.responseCode = 451;
        return callback(err);
      }
      if (options.rejectRecipients?.includes(address.address.toLowerCase())) {
        const err = new Error('Mailbox unavailable') as Error & { responseCode: number };
        err.responseCode = 550;
        return callback(err);
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw).then(
          (parsed) => {
            const envelopeTo = session.envelope.rcptTo.map((r) => r.address);
            const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
            if (envelopeTo.some((address) => options.rejectDataTo?.includes(address.toLowerCase()))) {
              refused.push({ envelopeFrom, envelopeTo, raw, parsed });
              const err = new Error('Message refused as spam') as Error & { responseCode: number };
              err.responseCode = 550;
              return callback(err);
            }
            messages.push({ envelopeFrom, envelopeTo, raw, parsed });
            waiters.splice(0).forEach((w) => w());
            if (answerDelayMs) setTimeout(() => callback(), answerDelayMs);
            else callback();
          },
          // A message the parser cannot read is refused to the client rather than left unanswered.
          (err: Error) => callback(err),
        );
      });
    },
  });
  // A client killed mid-conversation (a SIGKILLed worker) resets its socket: not the server's failure.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;

  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    refused,
    waitFor(match, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`no matching mail within ${timeoutMs} ms (received ${messages.length})`)), timeoutMs);
        const check = () => {
          const found = messages.find(match);
          if (found) {
            clearTimeout(deadline);
            resolve(found);
          } else waiters.push(check);
        };
        check();
      });
    },
    failTemporarily(address, times) {
      temporaryFailures.set(address.toLowerCase(), times);
    },
    refuseAll(refuse) {
      refusingAll = refuse;
    },
    slowDown(ms) {
      answerDelayMs = ms;
    },
    // smtp-server waits for clients to hang up; a pooled client that never does must not hold
    // the caller up for more than a moment.
    close: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2000);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
