import net from 'node:net';
import os from 'node:os';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestAccount, TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { smtpDialog, type SmtpDialog, type SmtpReply } from '../support/smtpDialog';
import { CONNECTIONS_PER_ADDRESS } from '../../api/smtp/smtpListener';
import { MAX_HEADER_FIELDS, MAX_HEADER_FIELD_BYTES, MAX_LINE_BYTES, MAX_MIME_NESTING, MessageBoundsScanner } from '../../api/smtp/messageBounds';
import { ConfigError, loadConfig } from '../../lib/config';

/**
 * The bounds of the one SMTP front door (api/smtp/smtpListener.ts, api/smtp/messageBounds.ts),
 * over real SMTP on both roles of one API: the idle timeout (SMTP_IDLE_TIMEOUT_SECONDS=3 here: short, yet long enough that a test process stalled on a loaded machine does not lose a connection it keeps),
 * connections per client address, and the shape of a message at DATA (header fields, header
 * size, line length, MIME nesting), each refused 552 5.3.4 with the session going on.
 */
let dns: TestDnsServer;
let sink: TestSmtpServer;
let stack: TestStack;
let inboundPort: number;
let submissionPort: number;
let sender: { account: TestAccount; project: TestProject; domain: string };

beforeAll(async () => {
  dns = await startTestDnsServer();
  sink = await startSmtpServer();
  stack = await startTestStack({
    inboundSmtp: true,
    smtpPorts: { submission: 0 },
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: sink.url, SMTP_IDLE_TIMEOUT_SECONDS: '3' },
  });
  inboundPort = stack.api.smtp.inbound!.port;
  submissionPort = stack.api.smtp.submission!.port;
  sender = await projectWithVerifiedDomain(stack, dns);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

/** A raw TCP client that says nothing: what the server sends, and when it closes the connection. */
function silentClient(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  let received = '';
  const lines: string[] = [];
  const lineWaiters: Array<(line: string) => void> = [];
  socket.on('data', (chunk: string) => {
    received += chunk;
    for (let at = received.indexOf('\r\n'); at >= 0; at = received.indexOf('\r\n')) {
      const line = received.slice(0, at);
      received = received.slice(at + 2);
      const waiter = lineWaiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    closed,
    firstLine: () => new Promise<string>((resolve) => (lines.length ? resolve(lines.shift()!) : lineWaiters.push(resolve))),
    nextLine: () => new Promise<string>((resolve) => (lines.length ? resolve(lines.shift()!) : lineWaiters.push(resolve))),
  };
}

/** Resolves with `promise`, or rejects once `ms` passed without it (a bound, not a wait). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A dialog on the role's port, authenticated on the relay; ready for MAIL FROM. */
async function openDialog(role: 'inbound' | 'submission'): Promise<SmtpDialog> {
  const dialog = await smtpDialog(role === 'inbound' ? inboundPort : submissionPort);
  if (role === 'submission') expect((await dialog.authPlain('anyone', sender.project.secretKey)).code).toBe(235);
  return dialog;
}

/** One message in an open dialog: the reply to DATA's end (or to the command that refused). */
async function send(dialog: SmtpDialog, role: 'inbound' | 'submission', to: string, raw: string): Promise<SmtpReply> {
  const mail = await dialog.command(role === 'inbound' ? 'MAIL FROM:<someone@elsewhere.test>' : `MAIL FROM:<app@${sender.domain}>`);
  expect(mail.code).toBe(250);
  expect((await dialog.command(`RCPT TO:<${to}>`)).code).toBe(250);
  expect((await dialog.command('DATA')).code).toBe(354);
  return dialog.message(raw);
}

const recipient = (role: 'inbound' | 'submission', local: string) => (role === 'inbound' ? `${local}@${sender.domain}` : `${local}@example.org`);
const message = (role: 'inbound' | 'submission', headers: string[], body: string) =>
  [`From: ${role === 'inbound' ? 'someone@elsewhere.test' : `app@${sender.domain}`}`, 'To: x@example.org', ...headers, '', body].join('\r\n');

/** `depth` multiparts one inside the other, a text part in the innermost. */
function nestedMessage(role: 'inbound' | 'submission', depth: number, text: string): string {
  const lines = [`Subject: nested ${depth}`, 'MIME-Version: 1.0', `Content-Type: multipart/mixed; boundary="b0"`, ''];
  for (let i = 0; i < depth; i++) {
    lines.push(`--b${i}`);
    lines.push(i + 1 < depth ? `Content-Type: multipart/mixed; boundary="b${i + 1}"` : 'Content-Type: text/plain; charset=utf-8', '');
  }
  lines.push(text);
  for (let i = depth - 1; i >= 0; i--) lines.push(`--b${i}--`);
  return message(role, lines.slice(0, 3), lines.slice(4).join('\r\n'));
}

async function inboundEmail(project: TestProject, to: string) {
  return eventually(async () => {
    const res = await stack.http.get('/emails?source=INBOUND', { key: project.secretKey });
    const email = (res.body.data as Array<Record<string, any>>).find((e) => e.to === to);
    expect(email).toBeDefined();
    return email!;
  }, 60_000);
}

/** Inbound: the text of the record the worker made (processed with what parsed); relay: the message the next hop received. */
async function deliveredText(role: 'inbound' | 'submission', to: string): Promise<string> {
  if (role === 'submission') return (await sink.waitFor((m) => m.envelopeTo.includes(to), 60_000)).raw;
  const email = await inboundEmail(sender.project, to);
  const detail = await stack.http.get(`/emails/${email.id}`, { key: sender.project.secretKey });
  return String(detail.body.text);
}

describe('SMTP_IDLE_TIMEOUT_SECONDS', () => {
  const env = (vars: Record<string, string>) => loadConfig({ DATA_DIR: os.tmpdir(), SECRET: 'a-test-secret-of-length', ...vars });

  it('is 60 by default, and 1 to 300 (RFC 5321 4.5.3.2 has servers wait 5 minutes)', () => {
    expect(env({}).smtpListeners.idleTimeoutSeconds).toBe(60);
    expect(env({ SMTP_IDLE_TIMEOUT_SECONDS: '300' }).smtpListeners.idleTimeoutSeconds).toBe(300);
    expect(() => env({ SMTP_IDLE_TIMEOUT_SECONDS: '0' })).toThrow(ConfigError);
    expect(() => env({ SMTP_IDLE_TIMEOUT_SECONDS: '301' })).toThrow(/SMTP_IDLE_TIMEOUT_SECONDS/);
  });
});

describe.each(['inbound', 'submission'] as const)('the %s listener', (role) => {
  const port = () => (role === 'inbound' ? inboundPort : submissionPort);

  it('answers a client that sends nothing for SMTP_IDLE_TIMEOUT_SECONDS 421 and closes the connection', async () => {
    const client = silentClient(port());
    expect(await client.firstLine()).toMatch(/^220 /);
    const startedAt = Date.now();
    // 3 s configured: a bound of 15 s only keeps a broken timeout from hanging the test.
    expect(await within(client.nextLine(), 15_000, 'the 421')).toMatch(/^421 .*Timeout/);
    await within(client.closed, 15_000, 'the close');
    // Not the default 60 s: the setting is what closed it.
    expect(Date.now() - startedAt).toBeLessThan(15_000);
    expect(client.socket.destroyed).toBe(true);
  });

  it('keeps a client that goes on talking past the idle timeout', async () => {
    const dialog = await openDialog(role);
    try {
      const startedAt = Date.now();
      // Each command well within 3 s of the last, 4.5 s in all.
      while (Date.now() - startedAt < 4500) {
        await new Promise((r) => setTimeout(r, 300));
        expect((await dialog.command('NOOP')).code).toBe(250);
      }
      const reply = await send(dialog, role, recipient(role, `talker-${role}`), message(role, ['Subject: still here'], 'Still talking'));
      expect(reply.code).toBe(250);
    } finally {
      dialog.close();
    }
  });

  it(`takes ${CONNECTIONS_PER_ADDRESS} connections from one address, answers the next 421 4.7.0 and closes it, and takes one again once one leaves`, async () => {
    const held: Array<ReturnType<typeof silentClient>> = [];
    const others: Array<ReturnType<typeof silentClient>> = [];
    // The held connections say NOOP now and then: the 3 s idle timeout must not be what frees a place.
    const keepAlive = setInterval(() => held.forEach((c) => c.socket.write('NOOP\r\n')), 250);
    try {
      for (let i = 0; i < CONNECTIONS_PER_ADDRESS; i++) {
        const client = silentClient(port());
        expect(await client.firstLine()).toMatch(/^220 /);
        held.push(client);
      }
      const refused = silentClient(port());
      others.push(refused);
      expect(await refused.firstLine()).toMatch(/^421 4\.7\.0 Too many connections/);
      await within(refused.closed, 15_000, 'the refused connection closing');
      expect(held.every((c) => !c.socket.destroyed)).toBe(true);

      const leaving = held.shift()!;
      leaving.socket.write('QUIT\r\n');
      for (let line = await leaving.nextLine(); !line.startsWith('221 '); line = await leaving.nextLine()) expect(line).toMatch(/^250 /);
      await leaving.closed;
      // The listener counts the connection out when its side of the socket closes, a moment later.
      await eventually(async () => {
        const again = silentClient(port());
        others.push(again);
        const first = await again.firstLine();
        again.socket.destroy();
        expect(first).toMatch(/^220 /);
      }, 15_000);
    } finally {
      clearInterval(keepAlive);
      for (const client of [...held, ...others]) client.socket.destroy();
    }
  });

  describe('refuses at DATA with 552 5.3.4 naming the bound, stores and sends nothing, and the session goes on', () => {
    const cases: Array<[string, () => string, RegExp]> = [
      [
        `more than ${MAX_HEADER_FIELDS} header fields`,
        () => message(role, ['Subject: many fields', ...Array.from({ length: MAX_HEADER_FIELDS }, (_, i) => `X-Field-${i}: ${i}`)], 'Hello'),
        /^552 5\.3\.4 Too many header fields: at most 1000/,
      ],
      [
        `a header field longer than ${MAX_HEADER_FIELD_BYTES} bytes unfolded (its lines short)`,
        () =>
          message(role, ['Subject: long field', `X-Long: start${'\r\n '.concat('a'.repeat(900)).repeat(Math.ceil(MAX_HEADER_FIELD_BYTES / 900))}`], 'Hello'),
        /^552 5\.3\.4 A header field is too long: at most 102400 bytes/,
      ],
      [
        `a body line longer than ${MAX_LINE_BYTES} bytes`,
        () => message(role, ['Subject: long line'], `Short line\r\n${'x'.repeat(MAX_LINE_BYTES + 1)}\r\nShort again`),
        /^552 5\.3\.4 A line is too long: at most 1048576 bytes/,
      ],
      [
        `150 multipart levels (more than ${MAX_MIME_NESTING})`,
        () => nestedMessage(role, 150, 'Too deep'),
        /^552 5\.3\.4 MIME parts are nested too deeply: at most 100 levels/,
      ],
    ];

    it.each(cases)('%s', async (_name, make, reply) => {
      const refusedTo = recipient(role, `refused-${Math.random().toString(36).slice(2, 10)}`);
      const dialog = await openDialog(role);
      try {
        const refused = await send(dialog, role, refusedTo, make());
        expect(refused.text).toMatch(reply);
        // The session goes on: a message within every bound is taken.
        const fine = await send(dialog, role, recipient(role, `after-${role}`), message(role, ['Subject: fine'], 'Fine'));
        expect(fine.code).toBe(250);
      } finally {
        dialog.close();
      }
      const stored = await stack.orm.em
        .fork()
        .execute(role === 'inbound' ? `select id from inbound_messages where envelope::text ilike ?` : `select id from emails where to_address = ?`, [
          role === 'inbound' ? `%${refusedTo}%` : refusedTo,
        ]);
      expect(stored).toHaveLength(0);
    });
  });

  it('takes a message 20 multipart levels deep', async () => {
    const to = recipient(role, `deep-${role}`);
    const dialog = await openDialog(role);
    try {
      const reply = await send(dialog, role, to, nestedMessage(role, 20, 'The deepest part'));
      expect(reply.code).toBe(250);
    } finally {
      dialog.close();
    }
    expect(await deliveredText(role, to)).toContain('The deepest part');
  });
});

describe('MessageBoundsScanner', () => {
  const scan = (raw: string, chunkSize: number) => {
    const scanner = new MessageBoundsScanner();
    const bytes = Buffer.from(raw, 'latin1');
    for (let at = 0; at < bytes.length; at += chunkSize) scanner.write(bytes.subarray(at, at + chunkSize));
    return scanner.end();
  };
  const nested = (depth: number, closeEach = true) => {
    const lines = ['Content-Type: multipart/mixed; boundary="b0"', ''];
    for (let i = 0; i < depth; i++)
      lines.push(`--b${i}`, i + 1 < depth ? `Content-Type: multipart/alternative;\r\n boundary=b${i + 1}` : 'Content-Type: text/plain', '');
    lines.push('text');
    if (closeEach) for (let i = depth - 1; i >= 0; i--) lines.push(`--b${i}--  `);
    return lines.join('\r\n');
  };
  const fields = (n: number) => `${Array.from({ length: n }, (_, i) => `X-F${i}: v`).join('\r\n')}\r\n\r\nbody`;

  it.each([1, 7, 64 * 1024])('finds the same bounds whatever the chunks (%i bytes at a time)', (chunk) => {
    expect(scan(nested(MAX_MIME_NESTING), chunk)).toBeNull();
    expect(scan(nested(MAX_MIME_NESTING + 1), chunk)).toBe('mime-nesting');
    expect(scan(fields(MAX_HEADER_FIELDS), chunk)).toBeNull();
    expect(scan(fields(MAX_HEADER_FIELDS + 1), chunk)).toBe('header-fields');
    expect(scan(`X: ${'a'.repeat(MAX_HEADER_FIELD_BYTES - 3)}\r\n\r\nb`, chunk)).toBeNull();
    expect(scan(`X: ${'a'.repeat(MAX_HEADER_FIELD_BYTES - 2)}\r\n\r\nb`, chunk)).toBe('header-field-size');
  });

  it.each([7, 64 * 1024])('bounds lines however they are cut (%i bytes at a time)', (chunk) => {
    expect(scan(`S: x\r\n\r\n${'b'.repeat(MAX_LINE_BYTES)}\r\nend`, chunk)).toBeNull();
    expect(scan(`S: x\r\n\r\n${'b'.repeat(MAX_LINE_BYTES)}`, chunk)).toBeNull();
    expect(scan(`S: x\r\n\r\n${'b'.repeat(MAX_LINE_BYTES + 1)}\n`, chunk)).toBe('line-length');
  });

  it('counts parts as the parser builds them: siblings do not add up, a delimiter of an outer multipart ends the inner ones', () => {
    // 150 multiparts side by side, each one level below the top.
    const siblings = ['Content-Type: multipart/mixed; boundary=top', ''];
    for (let i = 0; i < 150; i++)
      siblings.push('--top', `Content-Type: multipart/related; boundary="s${i}"`, '', `--s${i}`, 'Content-Type: text/plain', '', 'x');
    siblings.push('--top--');
    expect(scan(siblings.join('\r\n'), 1000)).toBeNull();
    // Inner multiparts never closed: the next delimiter of the top one ends them.
    expect(scan(nested(MAX_MIME_NESTING, false).replace(/text$/, 'text\r\n--b0\r\nContent-Type: text/plain\r\n\r\nnext\r\n--b0--'), 1000)).toBeNull();
    // Embedded messages (not encoded) are levels too, as for Postfix's mime_nesting_limit.
    const embedded = `${'Content-Type: message/rfc822\r\n\r\n'.repeat(MAX_MIME_NESTING + 1)}Subject: inner\r\n\r\nbody`;
    expect(scan(embedded, 1000)).toBe('mime-nesting');
    expect(
      scan(`Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n${'Content-Type: message/rfc822\r\n\r\n'.repeat(200)}`, 1000),
    ).toBeNull();
    // An RFC 2231 boundary is a boundary.
    const continued = ['Content-Type: multipart/mixed; boundary="b0"', ''];
    for (let i = 0; i < 120; i++) continued.push(`--b${i}`, `Content-Type: multipart/mixed; boundary*0="b"; boundary*1="${i + 1}"`, '');
    expect(scan(continued.join('\r\n'), 1000)).toBe('mime-nesting');
  });
});
