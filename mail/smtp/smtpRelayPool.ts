import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { parseConnectionUrl } from 'nodemailer/lib/shared';
import type { Logger } from '../../lib/logger';

/**
 * A pool of SMTP connections to one relay that hands over messages already built (RFC 5322
 * bytes), over nodemailer's SMTPConnection (PIPELINING, STARTTLS, AUTH, timeouts as nodemailer
 * does them). nodemailer's own pooled transport composes every message as a stream and pipes it
 * through a stream pipeline even when given raw bytes, which costs considerably more CPU per
 * message than handing the same bytes to a connection directly (the figures: docs/architecture/
 * sending-path.md, "How a message is made and handed over", step 4).
 *
 * Each connection carries one message at a time; at most `maxConnections` are open, and a send
 * waits for a free one. A connection is replaced after `maxMessages` messages, after any error
 * other than the relay refusing one message, and when the relay closes it while idle.
 */
export interface RelayMessage {
  envelope: { from: string; to: string[] };
  raw: Buffer;
}

export interface RelayAnswer {
  response: string;
  accepted: string[];
  rejected: string[];
}

/** An SMTP error as nodemailer reports it: `responseCode` when the relay answered. */
export type RelayError = Error & { responseCode?: number; code?: string; command?: string };

export interface SmtpRelayPool {
  send(message: RelayMessage): Promise<RelayAnswer>;
  close(): void;
}

export interface SmtpRelayOptions {
  maxConnections: number;
  maxMessages: number;
  connectionTimeout: number;
  greetingTimeout: number;
  socketTimeout: number;
}

interface PooledConnection {
  connection: SMTPConnection;
  /** Resolves once connected (and logged in), or rejects. */
  ready: Promise<void>;
  messages: number;
  busy: boolean;
  closed: boolean;
  /** Fails the send in flight: nodemailer forgets it, uncalled, when the connection is closed from this side. */
  abandon?: () => void;
}

/** Errors of the connection rather than of the message: a relay that dropped an idle connection gives these on the next send. */
const CONNECTION_ERRORS = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET']);

export function createSmtpRelayPool(url: string, options: SmtpRelayOptions, logger: Logger): SmtpRelayPool {
  const settings = parseConnectionUrl(url) as SMTPConnection.Options & { auth?: { user?: string; pass?: string } };
  const connections = new Set<PooledConnection>();
  const waiting: Array<{ resolve(pooled: PooledConnection): void; reject(err: Error): void }> = [];
  let closed = false;

  function open(): PooledConnection {
    const connection = new SMTPConnection({
      ...settings,
      connectionTimeout: options.connectionTimeout,
      greetingTimeout: options.greetingTimeout,
      socketTimeout: options.socketTimeout,
    });
    const pooled: PooledConnection = { connection, ready: Promise.resolve(), messages: 0, busy: false, closed: false };
    const drop = () => discard(pooled);
    connection.on('error', (err: RelayError) => {
      drop();
      logger.debug({ err: err.message, code: err.code }, 'smtp connection error');
    });
    connection.on('end', drop);
    pooled.ready = new Promise<void>((resolve, reject) => {
      // connect() calls back only once connected; a failure to connect is an 'error' event, and a
      // connection closed before it was ready (the pool closing) only ends.
      connection.once('error', reject);
      connection.once('end', () => reject(new Error('The SMTP connection closed before it was ready')));
      connection.connect((err) => {
        if (err) return reject(err);
        const auth = settings.auth;
        if (!auth?.user && !auth?.pass) return resolve();
        connection.login({ user: auth.user ?? '', pass: auth.pass ?? '' }, (loginErr) => (loginErr ? reject(loginErr) : resolve()));
      });
    });
    pooled.ready.catch(drop);
    connections.add(pooled);
    return pooled;
  }

  function discard(pooled: PooledConnection): void {
    if (pooled.closed) return;
    pooled.closed = true;
    connections.delete(pooled);
    pooled.connection.close();
    pooled.abandon?.();
    // A send waiting for a connection can have the room this one leaves.
    if (waiting.length && !closed) waiting.shift()!.resolve(take()!);
  }

  /** An idle connection, or a new one while there is room; null when all are busy. */
  function take(): PooledConnection | null {
    for (const pooled of connections) {
      if (!pooled.busy && !pooled.closed) {
        pooled.busy = true;
        return pooled;
      }
    }
    if (connections.size >= options.maxConnections) return null;
    const pooled = open();
    pooled.busy = true;
    return pooled;
  }

  function release(pooled: PooledConnection): void {
    pooled.busy = false;
    if (pooled.messages >= options.maxMessages) {
      pooled.connection.quit();
      discard(pooled);
      return;
    }
    const next = waiting.shift();
    if (next) {
      pooled.busy = true;
      next.resolve(pooled);
    }
  }

  const acquire = () =>
    new Promise<PooledConnection>((resolve, reject) => {
      const pooled = take();
      if (pooled) resolve(pooled);
      else waiting.push({ resolve, reject });
    });

  async function sendOnce(message: RelayMessage): Promise<{ answer?: RelayAnswer; error?: RelayError; reused: boolean }> {
    const pooled = await acquire();
    const reused = pooled.messages > 0;
    try {
      await pooled.ready;
    } catch (err) {
      return { error: err as RelayError, reused: false };
    }
    return new Promise((resolve) => {
      pooled.abandon = () => resolve({ error: Object.assign(new Error('The SMTP connection was closed during the send'), { code: 'ECONNECTION' }), reused });
      pooled.connection.send(message.envelope, message.raw, (err, info) => {
        pooled.abandon = undefined;
        pooled.messages++;
        if (!err) {
          release(pooled);
          return resolve({
            answer: { response: String(info.response ?? ''), accepted: toAddresses(info.accepted), rejected: toAddresses(info.rejected) },
            reused,
          });
        }
        const error = err as RelayError;
        if ((error.code === 'EENVELOPE' || error.code === 'EMESSAGE') && error.responseCode !== 421 && !pooled.closed) {
          // The relay refused this message; the session is fine once reset.
          pooled.connection.reset((resetErr) => (resetErr ? discard(pooled) : release(pooled)));
        } else {
          discard(pooled);
        }
        resolve({ error, reused });
      });
    });
  }

  return {
    async send(message) {
      if (closed) throw new Error('The SMTP pool is closed');
      let attempt = await sendOnce(message);
      // A connection the relay closed while it sat idle fails its next send before anything was
      // accepted: that one send goes again over a fresh connection.
      if (attempt.error && attempt.reused && !closed && attempt.error.responseCode === undefined && CONNECTION_ERRORS.has(attempt.error.code ?? '')) {
        attempt = await sendOnce(message);
      }
      if (attempt.error) throw attempt.error;
      return attempt.answer!;
    },
    close() {
      closed = true;
      // Sends still waiting for a connection fail now rather than wait for ever.
      for (const waiter of waiting.splice(0)) waiter.reject(new Error('The SMTP pool is closed'));
      for (const pooled of [...connections]) {
        pooled.connection.quit();
        discard(pooled);
      }
    },
  };
}

function toAddresses(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}
