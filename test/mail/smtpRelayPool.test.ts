import net, { type AddressInfo, type Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { createSmtpRelayPool, type RelayError, type SmtpRelayOptions } from '../../mail/smtp/smtpRelayPool';
import { createLogger } from '../../lib/logger';
import { findFreePort } from '../../lib/freePort';
import { eventually } from '../support/eventually';

const logger = createLogger({ level: 'silent', name: 'test' });
const options: SmtpRelayOptions = { maxConnections: 3, maxMessages: 100, connectionTimeout: 5_000, greetingTimeout: 5_000, socketTimeout: 10_000 };

/** A relay that records each message with the connection it came over, and how many connections were open at most. */
async function startRelay(extra: Partial<SMTPServerOptions> = {}) {
  const received: Array<{ to: string[]; raw: string; connection: string }> = [];
  const sockets = new Map<string, Socket>();
  let open = 0;
  let mostOpen = 0;
  let connectionsSeen = 0;
  let dropAtNextMailFrom = false;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onConnect(session, callback) {
      open++;
      connectionsSeen++;
      mostOpen = Math.max(mostOpen, open);
      callback();
    },
    onClose() {
      open--;
    },
    onMailFrom(_address, session, callback) {
      if (dropAtNextMailFrom) {
        // The relay gave up on the connection just as the client used it again.
        dropAtNextMailFrom = false;
        sockets.get(`${session.remotePort}`)?.destroy();
        return;
      }
      callback();
    },
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('refused')) return callback(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }));
      if (address.address.startsWith('later')) return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString(), connection: session.id });
        callback();
      });
    },
    ...extra,
  });
  server.on('connect', () => undefined);
  server.server.on('connection', (socket: Socket) => sockets.set(`${socket.remotePort}`, socket));
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    received,
    get mostOpen() {
      return mostOpen;
    },
    get connectionsSeen() {
      return connectionsSeen;
    },
    /** The next MAIL FROM finds its connection closed. */
    dropAtNextMailFrom: () => (dropAtNextMailFrom = true),
    /** Drops every open connection from the relay's side, as a relay does with idle ones. */
    dropAll: () => sockets.forEach((socket) => socket.destroy()),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const message = (to: string, n = 0) => ({
  envelope: { from: 'news@example.com', to: [to] },
  raw: Buffer.from(`From: news@example.com\r\nTo: ${to}\r\nSubject: message ${n}\r\n\r\n.a line starting with a dot\r\nbody ${n}\r\n`),
});

describe('SMTP relay pool', () => {
  it('hands over every message once, over at most maxConnections connections, dots stuffed', async () => {
    const relay = await startRelay();
    const pool = createSmtpRelayPool(relay.url, options, logger);
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => pool.send(message(`reader${i}@example.org`, i))));
      expect(answers.every((a) => a.response.startsWith('250'))).toBe(true);
      expect(answers[0].accepted).toEqual(['reader0@example.org']);
      expect(relay.received).toHaveLength(200);
      expect(new Set(relay.received.map((m) => m.to[0])).size).toBe(200);
      expect(relay.mostOpen).toBeLessThanOrEqual(3);
      expect(relay.received[0].raw).toContain('\r\n.a line starting with a dot\r\n');
    } finally {
      pool.close();
      await relay.close();
    }
  });

  it('reports refusals with their SMTP code and keeps using the connection', async () => {
    const relay = await startRelay();
    const pool = createSmtpRelayPool(relay.url, { ...options, maxConnections: 1 }, logger);
    try {
      await expect(pool.send(message('refused@example.org'))).rejects.toMatchObject({ responseCode: 550 });
      await expect(pool.send(message('later@example.org'))).rejects.toMatchObject({ responseCode: 451 });
      await pool.send(message('reader@example.org'));
      expect(relay.received.map((m) => m.to[0])).toEqual(['reader@example.org']);
      expect(relay.connectionsSeen).toBe(1);
    } finally {
      pool.close();
      await relay.close();
    }
  });

  it('replaces a connection after maxMessages, and one the relay dropped while idle', async () => {
    const relay = await startRelay();
    const pool = createSmtpRelayPool(relay.url, { ...options, maxConnections: 1, maxMessages: 2 }, logger);
    try {
      for (let i = 0; i < 6; i++) await pool.send(message(`reader${i}@example.org`, i));
      expect(relay.connectionsSeen).toBe(3);
      relay.dropAll();
      await pool.send(message('after-drop@example.org'));
      // Dropped just as the pool reuses it, before the pool could notice.
      relay.dropAtNextMailFrom();
      await pool.send(message('dropped-in-use@example.org'));
      expect(relay.received.map((m) => m.to[0])).toEqual([
        ...Array.from({ length: 6 }, (_, i) => `reader${i}@example.org`),
        'after-drop@example.org',
        'dropped-in-use@example.org',
      ]);
    } finally {
      pool.close();
      await relay.close();
    }
  });

  it('logs in when the URL carries credentials, and reports a refused login', async () => {
    const relay = await startRelay({
      authOptional: false,
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      onAuth(auth, _session, callback) {
        if (auth.username === 'mailroom' && auth.password === 'p@ss word') return callback(null, { user: 'mailroom' });
        callback(Object.assign(new Error('Invalid credentials'), { responseCode: 535 }));
      },
    });
    const good = createSmtpRelayPool(`smtp://mailroom:${encodeURIComponent('p@ss word')}@127.0.0.1:${relay.port}`, options, logger);
    const bad = createSmtpRelayPool(`smtp://mailroom:wrong@127.0.0.1:${relay.port}`, options, logger);
    try {
      await good.send(message('reader@example.org'));
      expect(relay.received).toHaveLength(1);
      const err = (await bad.send(message('other@example.org')).catch((e: unknown) => e)) as RelayError;
      expect(err.responseCode).toBe(535);
      expect(relay.received).toHaveLength(1);
    } finally {
      good.close();
      bad.close();
      await relay.close();
    }
  });

  it('fails the sends in progress and those waiting for a connection when it is closed', async () => {
    // A relay that accepts connections and never greets: the one connection stays busy connecting.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const pool = createSmtpRelayPool(`smtp://127.0.0.1:${(silent.address() as AddressInfo).port}`, { ...options, maxConnections: 1 }, logger);
    try {
      const connecting = pool.send(message('first@example.org')).then(
        () => 'sent',
        () => 'failed',
      );
      const waiting = pool.send(message('second@example.org')).then(
        () => 'sent',
        (err: Error) => err.message,
      );
      pool.close();
      expect(await waiting).toBe('The SMTP pool is closed');
      expect(await connecting).toBe('failed');
    } finally {
      silent.close();
    }
    // A relay that takes the message and never answers its end: the send is in flight when the pool closes.
    const mute = await startRelay({ onData: (stream) => stream.resume() });
    const pool2 = createSmtpRelayPool(mute.url, options, logger);
    try {
      const inFlight = pool2.send(message('third@example.org')).then(
        () => 'sent',
        () => 'failed',
      );
      await eventually(() => expect(mute.connectionsSeen).toBe(1));
      pool2.close();
      expect(await inFlight).toBe('failed');
    } finally {
      await mute.close();
    }
  });

  it('fails a send to a relay that does not answer as a connection error, with no SMTP code', async () => {
    const pool = createSmtpRelayPool(`smtp://127.0.0.1:${await findFreePort()}`, options, logger);
    try {
      const err = (await pool.send(message('reader@example.org')).catch((e: unknown) => e)) as RelayError;
      expect(err.message).toMatch(/ECONNREFUSED|connect/i);
      expect(err.responseCode).toBeUndefined();
    } finally {
      pool.close();
    }
  });
});
