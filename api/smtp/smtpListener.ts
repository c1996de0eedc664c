import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { SmtpListenerSettings } from '../../lib/config';
import type { Logger } from '../../lib/logger';

/**
 * The one SMTP front door of Mailroom (contract 20), on the nodemailer project's `smtp-server`:
 * what every role shares (STARTTLS when SMTP_TLS_CERT/KEY are set, the banner, timeouts for a
 * client that sends nothing, a bound on connections per client address, logging, listen and
 * close). A role (inbound mail, submission) brings its own hooks, as a route brings its handler:
 * it validates what the client says and calls a service.
 */

/** Connections one client address may hold open at once; the next is answered 421 and closed. */
export const CONNECTIONS_PER_ADDRESS = 20;
/** A client silent this long is disconnected (RFC 5321 4.5.3.2 allows servers 5 minutes; a flood should not hold sockets that long). */
const SOCKET_TIMEOUT_MS = 60_000;
/** How long close() lets sessions in progress finish. */
const CLOSE_TIMEOUT_MS = 10_000;

/** An SMTP reply that refuses something: smtp-server sends `responseCode` and the message. */
export function smtpReply(responseCode: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode });
}

export type SmtpRoleHooks = Pick<SMTPServerOptions, 'onAuth' | 'onMailFrom' | 'onRcptTo' | 'onData' | 'onClose'> & {
  /** Extra smtp-server options of the role (size, authMethods, disabledCommands, …). */
  options?: Partial<SMTPServerOptions>;
};

export interface RunningSmtpListener {
  role: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Starts one SMTP listener for `role` on `port` (0 picks a free port, for tests). Resolves once
 * it listens.
 */
export async function startSmtpListener(
  role: string,
  port: number,
  settings: Pick<SmtpListenerSettings, 'host' | 'tls'>,
  hooks: SmtpRoleHooks,
  logger: Logger,
): Promise<RunningSmtpListener> {
  const log = logger.child({ smtp: role });
  const tls = settings.tls ? { cert: fs.readFileSync(settings.tls.certFile), key: fs.readFileSync(settings.tls.keyFile) } : null;
  const open = new Map<string, number>();
  // Sessions counted in `open` (a refused one is closed too, and was never counted).
  const counted = new Set<string>();
  const { options, ...handlers } = hooks;
  const server = new SMTPServer({
    name: undefined,
    banner: 'Mailroom',
    logger: false,
    secure: false,
    ...(tls ? { cert: tls.cert, key: tls.key } : {}),
    // Without a certificate there is no STARTTLS to offer.
    disabledCommands: tls ? [] : ['STARTTLS'],
    socketTimeout: SOCKET_TIMEOUT_MS,
    closeTimeout: CLOSE_TIMEOUT_MS,
    ...options,
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
    onData: handlers.onData,
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
