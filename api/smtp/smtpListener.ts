import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { SmtpListenerSettings } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { MessageBoundsScanner, boundReplyText } from './messageBounds';

/**
 * The one SMTP front door of Mailroom (contract 20), on the nodemailer project's `smtp-server`:
 * what every role shares (STARTTLS when SMTP_TLS_CERT/KEY are set, the banner, the idle timeout
 * SMTP_IDLE_TIMEOUT_SECONDS for a client that sends nothing, a bound on connections per client
 * address, reading DATA within the role's size and the shape bounds of messageBounds.ts, logging,
 * listen and close). A role (inbound mail, submission) brings its own hooks, as a route brings
 * its handler: it validates what the client says and calls a service.
 */

/** Connections one client address may hold open at once; the next is answered 421 and closed. */
export const CONNECTIONS_PER_ADDRESS = 20;
/** How long close() lets sessions in progress finish. */
const CLOSE_TIMEOUT_MS = 10_000;

/** An SMTP reply that refuses something: smtp-server sends `responseCode` and the message. */
export function smtpReply(responseCode: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode });
}

export type SmtpRoleHooks = Pick<SMTPServerOptions, 'onAuth' | 'onMailFrom' | 'onRcptTo' | 'onClose'> & {
  /** Extra smtp-server options of the role (authMethods, disabledCommands, …). */
  options?: Partial<SMTPServerOptions>;
  /** The largest message the role takes, advertised with SIZE; past it DATA is answered 552 5.3.4. */
  maxBytes: number;
  /**
   * A message that fit every bound: resolves with the text of the 250 reply, or rejects with an
   * smtpReply (anything else is answered 451).
   */
  onMessage: (raw: Buffer, session: SMTPServerSession) => Promise<string>;
};

export interface RunningSmtpListener {
  role: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Reads DATA to its end (smtp-server waits for that before any reply), keeping the message only
 * while it is within `maxBytes` and the shape bounds: past one, the rest is read and dropped, never
 * held whole, and the refusal names the bound. The session goes on either way.
 */
function readMessage(stream: SMTPServerDataStream, maxBytes: number): Promise<{ raw: Buffer } | { refusal: Error }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const bounds = new MessageBoundsScanner();
    let bytes = 0;
    let dropping = false;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (dropping) return;
      bounds.write(chunk);
      if (stream.sizeExceeded || bytes > maxBytes || bounds.result) {
        dropping = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    stream.on('error', reject);
    stream.on('end', () => {
      if (stream.sizeExceeded || bytes > maxBytes) return resolve({ refusal: smtpReply(552, `5.3.4 Message too big: at most ${maxBytes} bytes`) });
      const bound = bounds.result ?? bounds.end();
      if (bound) return resolve({ refusal: smtpReply(552, boundReplyText(bound)) });
      resolve({ raw: Buffer.concat(chunks, bytes) });
    });
  });
}

/**
 * Starts one SMTP listener for `role` on `port` (0 picks a free port, for tests). Resolves once
 * it listens.
 */
export async function startSmtpListener(
  role: string,
  port: number,
  settings: Pick<SmtpListenerSettings, 'host' | 'tls' | 'idleTimeoutSeconds'>,
  hooks: SmtpRoleHooks,
  logger: Logger,
): Promise<RunningSmtpListener> {
  const log = logger.child({ smtp: role });
  const tls = settings.tls ? { cert: fs.readFileSync(settings.tls.certFile), key: fs.readFileSync(settings.tls.keyFile) } : null;
  const open = new Map<string, number>();
  // Sessions counted in `open` (a refused one is closed too, and was never counted).
  const counted = new Set<string>();
  const { options, maxBytes, onMessage, ...handlers } = hooks;
  const server = new SMTPServer({
    name: undefined,
    banner: 'Mailroom',
    logger: false,
    secure: false,
    ...(tls ? { cert: tls.cert, key: tls.key } : {}),
    // Without a certificate there is no STARTTLS to offer.
    disabledCommands: tls ? [] : ['STARTTLS'],
    // RFC 5321 4.5.3.2 allows servers 5 minutes; a flood should not hold sockets that long.
    socketTimeout: settings.idleTimeoutSeconds * 1000,
    closeTimeout: CLOSE_TIMEOUT_MS,
    ...options,
    size: maxBytes,
    onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const address = session.remoteAddress;
      const count = (open.get(address) ?? 0) + 1;
      if (count > CONNECTIONS_PER_ADDRESS) {
        log.warn({ remoteAddress: address, connections: count - 1 }, 'smtp: too many connections from one address');
        return callback(smtpReply(421, '4.7.0 Too many connections from your address; try again later'));
      }
      open.set(address, count);
      counted.add(session.id);
      callback();
    },
    onClose(session: SMTPServerSession) {
      if (counted.delete(session.id)) {
        const address = session.remoteAddress;
        const count = (open.get(address) ?? 1) - 1;
        if (count > 0) open.set(address, count);
        else open.delete(address);
      }
      handlers.onClose?.(session, () => undefined);
    },
    onAuth: handlers.onAuth,
    onMailFrom: handlers.onMailFrom,
    onRcptTo: handlers.onRcptTo,
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) {
      readMessage(stream, maxBytes).then(
        (read) => {
          if ('refusal' in read) return callback(read.refusal);
          onMessage(read.raw, session).then(
            (reply) => callback(null, reply),
            (err: unknown) => {
              if ((err as { responseCode?: number }).responseCode) return callback(err as Error);
              log.error({ err }, 'smtp: could not take a message');
              callback(smtpReply(451, '4.3.0 Local error; try again later'));
            },
          );
        },
        (err: Error) => callback(err),
      );
    },
  });
  server.on('error', (err) => log.warn({ err }, 'smtp: connection error'));
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, settings.host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.server.address() as AddressInfo).port;
  log.info({ port: bound, host: settings.host ?? null, starttls: tls !== null }, `smtp ${role} listening`);
  return {
    role,
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
