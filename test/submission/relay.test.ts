import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { accountWithProject, type TestAccount, type TestProject, setBillingLimits } from '../support/accounts';
import { dkimResults, projectWithVerifiedDomain, verifyDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import { smtpDialog, type SmtpDialog } from '../support/smtpDialog';
import { makeTestCertificates, type TestCertificates } from '../support/certificates';
import { cleartextAuthAllowed, isLoopbackAddress } from '../../api/smtp/submissionSmtp';
import { ConfigError, loadConfig } from '../../lib/config';

let dns: TestDnsServer;
let sink: TestSmtpServer;
let stack: TestStack;
let port: number;
let sender: { account: TestAccount; project: TestProject; domain: string };
let certs: TestCertificates;

/** Small enough that an oversized attachment is cheap to make. */
const ATTACHMENTS_MAX_BYTES = 100_000;
/** Requests per project per minute: this file's projects make far fewer, except the one that hits it. */
const RATE_LIMIT = 40;

beforeAll(async () => {
  dns = await startTestDnsServer();
  sink = await startSmtpServer();
  certs = makeTestCertificates();
  stack = await startTestStack({
    env: {
      DNS_SERVERS: dns.address,
      DNS_TIMEOUT_MS: '2500',
      SMTP_URL: sink.url,
      DELIVERY_RETRY_DELAYS: '1s,1s,1s',
      ATTACHMENTS_MAX_BYTES: String(ATTACHMENTS_MAX_BYTES),
      RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      SUBMISSION_ALLOW_INSECURE_AUTH: 'false',
      // STARTTLS offered; the clients here that do not ask for it (ignoreTLS, raw dialogs) speak in clear text.
      SMTP_TLS_CERT: certs.serverCert,
      SMTP_TLS_KEY: certs.serverKey,
    },
    smtpPorts: { submission: 0 },
  });
  port = stack.api.smtp.submission!.port;
  sender = await projectWithVerifiedDomain(stack, dns);
});

afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
  certs?.remove();
});

const tag = () => crypto.randomBytes(4).toString('hex');
const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

function relay(password: string, options: { localAddress?: string } = {}) {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    localAddress: options.localAddress,
    auth: { user: 'wordpress', pass: password },
  } as SMTPTransport.Options);
}

/** The ids of `250 2.0.0 queued as <id>[,<id>…]`. */
function queuedIds(response: string): string[] {
  const match = /^250 2\.0\.0 queued as ([0-9a-f-]{36}(?:,[0-9a-f-]{36})*)$/.exec(response);
  if (!match) throw new Error(`not a queued reply: ${response}`);
  return match[1].split(',');
}

/** A dialog authenticated with `key`, ready for MAIL FROM. */
async function authenticated(key: string): Promise<SmtpDialog> {
  const dialog = await smtpDialog(port);
  const auth = await dialog.authPlain('anyone', key);
  expect(auth.code).toBe(235);
  return dialog;
}

/** One raw message through a raw dialog: the reply to DATA (or to the first command that refused). */
async function submitRaw(key: string, recipients: string[], raw: string) {
  const dialog = await authenticated(key);
  try {
    const mail = await dialog.command('MAIL FROM:<app@example.net>');
    if (mail.code !== 250) return mail;
    for (const r of recipients) {
      const rcpt = await dialog.command(`RCPT TO:<${r}>`);
      if (rcpt.code !== 250) return rcpt;
    }
    const data = await dialog.command('DATA');
    if (data.code !== 354) return data;
    const reply = await dialog.message(raw);
    // The listener is still there and the session still works after any refusal.
    expect((await dialog.command('RSET')).code).toBe(250);
    expect((await dialog.command('NOOP')).code).toBe(250);
    return reply;
  } finally {
    dialog.close();
  }
}

const rawMessage = (headers: string[], body = 'Hello') => `${headers.join('\r\n')}\r\n\r\n${body}\r\n`;

describe('SMTP listener settings', () => {
  const env = (vars: Record<string, string>) => loadConfig({ DATA_DIR: os.tmpdir(), SECRET: 'a-test-secret-of-length', ...vars });

  it('refuses SMTP_TLS_CERT without SMTP_TLS_KEY and the other way round (no silent start without STARTTLS)', () => {
    expect(() => env({ SMTP_TLS_CERT: '/etc/mailroom/cert.pem' })).toThrow(ConfigError);
    expect(() => env({ SMTP_TLS_KEY: '/etc/mailroom/key.pem' })).toThrow(/SMTP_TLS_CERT and SMTP_TLS_KEY go together/);
    expect(env({ SMTP_TLS_CERT: '/c.pem', SMTP_TLS_KEY: '/k.pem' }).smtpListeners.tls).toEqual({ certFile: '/c.pem', keyFile: '/k.pem' });
    expect(env({}).smtpListeners.tls).toBeNull();
  });
});

describe('SMTP relay (submission)', () => {
  it('GET /config reports smtpRelay while the submission listener listens', async () => {
    expect((await stack.http.get('/config')).body.smtpRelay).toBe(true);
  });

  it('sends each recipient its copy as /v1/send would: parts, attachments, To/Cc as written, custom headers, DKIM, tracking; records visible at GET /emails/:id', async () => {
    const t = tag();
    const [to1, to2, cc1] = [`ada-${t}@example.org`, `bob-${t}@example.org`, `cy-${t}@example.org`];
    const info = await relay(sender.project.secretKey).sendMail({
      from: { name: 'Acme Billing', address: `billing@${sender.domain}` },
      to: [{ name: 'Ada Lovelace', address: to1 }, to2],
      cc: cc1,
      replyTo: `support@${sender.domain}`,
      subject: 'Invoice {{not a template}} ready',
      text: 'Your invoice is ready: https://acme.example/pay',
      html: '<p>Your invoice is <a href="https://acme.example/pay">ready</a>.</p>',
      headers: { 'X-Order-Ref': `order-${t}`, 'In-Reply-To': '<thread-1@acme.example>' },
      attachments: [{ filename: 'invoice.txt', content: 'INVOICE 42', contentType: 'text/plain' }],
    });
    const ids = queuedIds(info.response);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);

    for (const address of [to1, to2, cc1]) {
      const mail = await sink.waitFor((m) => m.envelopeTo.includes(address));
      // Each copy goes to its own recipient only, and shows the To and Cc the client wrote.
      expect(mail.envelopeTo).toEqual([address]);
      expect(mail.parsed.to).toMatchObject({
        value: [
          { name: 'Ada Lovelace', address: to1 },
          { name: '', address: to2 },
        ],
      });
      expect(mail.parsed.cc).toMatchObject({ value: [{ address: cc1 }] });
      expect(mail.parsed.from?.value).toEqual([{ name: 'Acme Billing', address: `billing@${sender.domain}` }]);
      expect(mail.parsed.replyTo?.value[0].address).toBe(`support@${sender.domain}`);
      // A relayed message is not a template: its text stays as written.
      expect(mail.parsed.subject).toBe('Invoice {{not a template}} ready');
      expect(mail.parsed.text?.trim()).toBe('Your invoice is ready: https://acme.example/pay');
      expect(mail.parsed.headers.get('x-order-ref')).toBe(`order-${t}`);
      expect(mail.parsed.inReplyTo).toBe('<thread-1@acme.example>');
      expect(mail.parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([['invoice.txt', 'INVOICE 42']]);
      // What tracking adds: the click redirect and the pixel, as for /v1/send.
      const emailId = /^<([0-9a-f-]{36})@/.exec(mail.parsed.messageId!)![1];
      expect(ids).toContain(emailId);
      expect(mail.parsed.html).toContain(`http://mailroom.test/t/c/${emailId}?url=${encodeURIComponent('https://acme.example/pay')}`);
      expect(mail.parsed.html).toMatch(/http:\/\/mailroom\.test\/t\/o\/[^"]+\.gif/);
      const dkim = await dkimResults(stack, mail.raw);
      expect(dkim).toEqual([expect.objectContaining({ signingDomain: sender.domain, status: expect.objectContaining({ result: 'pass' }) })]);
    }

    const record = await eventually(async () => {
      const res = await stack.http.get(`/emails/${ids[0]}`, { key: sender.project.secretKey });
      return res.body.status === 'SENT' || res.body.status === 'DELIVERED' ? res : Promise.reject(new Error(res.body.status));
    });
    expect(record.status).toBe(200);
    expect(record.body).toMatchObject({
      id: ids[0],
      source: 'TRANSACTIONAL',
      from: `billing@${sender.domain}`,
      to: to1,
      subject: 'Invoice {{not a template}} ready',
    });
    expect(record.body.events.map((e: { name: string }) => e.name)).toContain('email.sent');
    // GET /emails/:id/raw is the message as handed over, To/Cc as written included.
    const raw = await stack.http.get(`/emails/${ids[1]}/raw`, { key: sender.project.secretKey });
    expect(raw.status).toBe(200);
    expect(raw.text).toMatch(/^Cc: /m);

    // The contact rules of /v1/send: new contacts are unsubscribed.
    const contacts = await sql(`select email, subscribed from contacts where project_id = ? and email in (?, ?, ?)`, [sender.project.id, to1, to2, cc1]);
    expect(contacts).toHaveLength(3);
    expect(contacts.map((c) => c.subscribed)).toEqual([false, false, false]);
  });

  it('answers a resubmission with the same Message-ID and recipients with the same ids and sends once; other content under it is 550 5.7.0', async () => {
    const t = tag();
    const to = `repeat-${t}@example.org`;
    const messageId = `<resubmit-${t}@app.example>`;
    const message = { from: `app@${sender.domain}`, to, subject: 'Once', text: 'only once', messageId };
    const first = queuedIds((await relay(sender.project.secretKey).sendMail(message)).response);
    const again = queuedIds((await relay(sender.project.secretKey).sendMail(message)).response);
    expect(again).toEqual(first);
    expect(await sql(`select id from emails where project_id = ? and to_address = ?`, [sender.project.id, to])).toHaveLength(1);

    const changed = relay(sender.project.secretKey).sendMail({ ...message, subject: 'Other content' });
    await expect(changed).rejects.toMatchObject({ responseCode: 550, response: expect.stringContaining(`5.7.0 Message-ID ${messageId}`) });
    const otherRecipients = relay(sender.project.secretKey).sendMail({ ...message, to: [to, `extra-${t}@example.org`] });
    await expect(otherRecipients).rejects.toMatchObject({ responseCode: 550 });
    expect(await sql(`select id from emails where project_id = ? and to_address = ?`, [sender.project.id, to])).toHaveLength(1);
  });

  it('sends concurrent duplicates once: each is answered the ids or asked to try again', async () => {
    const t = tag();
    const to = `race-${t}@example.org`;
    const message = { from: `app@${sender.domain}`, to, subject: 'Race', text: 'race', messageId: `<race-${t}@app.example>` };
    const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => relay(sender.project.secretKey).sendMail(message)));
    const answered = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [queuedIds(o.value.response)] : []));
    const refusedCodes = outcomes.flatMap((o) => (o.status === 'rejected' ? [(o.reason as { responseCode?: number }).responseCode] : []));
    expect(refusedCodes.filter((code) => code !== 451)).toEqual([]);
    expect(answered.length).toBeGreaterThan(0);
    for (const ids of answered) expect(ids).toEqual(answered[0]);
    // A later retry of any refused one is answered the same ids.
    expect(queuedIds((await relay(sender.project.secretKey).sendMail(message)).response)).toEqual(answered[0]);
    expect(await sql(`select id from emails where project_id = ? and to_address = ?`, [sender.project.id, to])).toHaveLength(1);
  });

  it('finishes a claim its process left behind: with the emails it recorded if they exist, else by sending; one in progress is 451', async () => {
    const t = tag();
    const to = `abandoned-${t}@example.org`;
    const messageId = `<abandoned-${t}@app.example>`;
    const message = { from: `app@${sender.domain}`, to, subject: 'Abandoned', text: 'abandoned', messageId };
    const [first] = queuedIds((await relay(sender.project.secretKey).sendMail(message)).response);
    const key = [sender.project.id, `smtp:${messageId.slice(1, -1)}`];
    const emailsTo = async () => (await sql(`select id from emails where project_id = ? and to_address = ?`, [sender.project.id, to])).map((r) => r.id);

    // In progress (a claim without an answer, just made): the resubmission is asked to try again.
    await sql(`update idempotency_keys set status_code = null where project_id = ? and key = ?`, key);
    await expect(relay(sender.project.secretKey).sendMail(message)).rejects.toMatchObject({ responseCode: 451, response: expect.stringContaining('4.3.0') });

    // Its process died after recording the emails: they are the answer, nothing is sent again.
    await sql(`update idempotency_keys set created_at = now() - interval '11 minutes' where project_id = ? and key = ?`, key);
    expect(queuedIds((await relay(sender.project.secretKey).sendMail(message)).response)).toEqual([first]);
    expect(await emailsTo()).toEqual([first]);

    // Its process died before recording anything (the ids it chose exist nowhere): sent now.
    await sql(`update idempotency_keys set status_code = null, response = ?, created_at = now() - interval '11 minutes' where project_id = ? and key = ?`, [
      JSON.stringify([crypto.randomUUID()]),
      ...key,
    ]);
    const [second] = queuedIds((await relay(sender.project.secretKey).sendMail(message)).response);
    expect(second).not.toBe(first);
    expect((await emailsTo()).sort()).toEqual([first, second].sort());
  });

  describe('AUTH', () => {
    it('refuses a wrong key and a public key with 535 5.7.8', async () => {
      const message = { from: `app@${sender.domain}`, to: 'x@example.org', subject: 's', text: 't' };
      await expect(relay(`sk_${'0'.repeat(40)}`).sendMail(message)).rejects.toMatchObject({ responseCode: 535, response: expect.stringContaining('5.7.8') });
      await expect(relay(sender.project.publicKey).sendMail(message)).rejects.toMatchObject({ responseCode: 535, response: expect.stringContaining('5.7.8') });
    });

    it('refuses MAIL before AUTH with 530 5.7.0', async () => {
      const dialog = await smtpDialog(port);
      try {
        const reply = await dialog.command('MAIL FROM:<app@example.net>');
        expect(reply.code).toBe(530);
        expect(reply.text).toContain('5.7.0');
      } finally {
        dialog.close();
      }
    });

    it('throttles guessing per client address as logins are, and keeps other addresses working', async () => {
      // Its own loopback address, so the rest of this file is not held off.
      const localAddress = '127.0.0.9';
      const codes: number[] = [];
      for (let i = 0; i < 12; i++) {
        const dialog = await smtpDialog(port, { localAddress });
        codes.push((await dialog.authPlain('guess', `sk_guess${i}`)).code);
        dialog.close();
      }
      expect(codes.slice(0, 10)).toEqual(Array(10).fill(535));
      expect(codes.slice(10)).toEqual([454, 454]);
      // Held off even with the right key; another address is not.
      const heldOff = await smtpDialog(port, { localAddress });
      const reply = await heldOff.authPlain('anyone', sender.project.secretKey);
      heldOff.close();
      expect(reply.code).toBe(454);
      expect(reply.text).toContain('4.7.0');
      (await authenticated(sender.project.secretKey)).close();
    });

    it('refuses AUTH in clear text from an address that is not loopback (SUBMISSION_ALLOW_INSECURE_AUTH=false)', async () => {
      expect(cleartextAuthAllowed({ secure: false, remoteAddress: '203.0.113.7' }, false)).toBe(false);
      expect(cleartextAuthAllowed({ secure: false, remoteAddress: '203.0.113.7' }, true)).toBe(true);
      expect(cleartextAuthAllowed({ secure: true, remoteAddress: '203.0.113.7' }, false)).toBe(true);
      for (const loopback of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(loopback)).toBe(true);
      for (const other of ['10.0.0.1', '::ffff:192.0.2.1', 'fd00::2', 'nonsense']) expect(isLoopbackAddress(other)).toBe(false);

      // Over a real connection from this machine's own non-loopback address, when it has one.
      const external = Object.values(os.networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal);
      if (!external) return;
      const dialog = await smtpDialog(port, { host: external.address, localAddress: external.address });
      try {
        const reply = await dialog.authPlain('anyone', sender.project.secretKey);
        expect(reply.code).toBe(538);
        expect(reply.text).toContain('STARTTLS');
        expect((await dialog.command('MAIL FROM:<app@example.net>')).code).toBe(530);
      } finally {
        dialog.close();
      }

      // The same address after STARTTLS: AUTH is taken and the message sent.
      const overTls = nodemailer.createTransport({
        host: external.address,
        port,
        secure: false,
        requireTLS: true,
        localAddress: external.address,
        tls: { ca: fs.readFileSync(certs.caCert), servername: 'localhost' },
        auth: { user: 'anyone', pass: sender.project.secretKey },
      } as SMTPTransport.Options);
      const info = await overTls.sendMail({ from: `app@${sender.domain}`, to: `tls-${tag()}@example.org`, subject: 'over TLS', text: 'secure' });
      expect(queuedIds(info.response)).toHaveLength(1);
    });
  });

  describe('refusals', () => {
    it('refuses a From domain the project has not verified with 550 5.7.1 naming it', async () => {
      const reply = relay(sender.project.secretKey).sendMail({ from: 'me@unverified.example', to: 'x@example.org', subject: 's', text: 't' });
      await expect(reply).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringMatching(/5\.7\.1 The domain unverified\.example is not verified/),
      });
    });

    it('lets go of the Message-ID of a message it refused: the same message is sent once its domain is verified', async () => {
      const t = tag();
      const domain = `late-${t}.example.com`;
      const message = { from: `app@${domain}`, to: `late-${t}@example.org`, subject: 'Once verified', text: 'now', messageId: `<late-${t}@${domain}>` };
      // The Message-ID is claimed side by side with the domain check; the 550 must not leave it claimed.
      await expect(relay(sender.project.secretKey).sendMail(message)).rejects.toMatchObject({ responseCode: 550 });
      await verifyDomain(stack, dns, sender.project, domain);
      const info = await relay(sender.project.secretKey).sendMail(message);
      expect(queuedIds(info.response)).toHaveLength(1);
      const mail = await sink.waitFor((m) => m.envelopeTo.includes(`late-${t}@example.org`));
      expect(mail).toBeTruthy();
    });

    it('takes at most 50 recipients: the 51st is answered 452 4.5.3 and the 50 are sent', async () => {
      const t = tag();
      const recipients = Array.from({ length: 51 }, (_, i) => `r${i}-${t}@example.org`);
      const info = await relay(sender.project.secretKey).sendMail({ from: `app@${sender.domain}`, to: recipients, subject: 'Many', text: 'many' });
      expect(info.rejected).toEqual([recipients[50]]);
      expect(info.rejectedErrors?.[0]).toMatchObject({ responseCode: 452, response: expect.stringContaining('4.5.3') });
      expect(queuedIds(info.response)).toHaveLength(50);
    });

    it('refuses a message without From, with a CR/LF in its Subject, or malformed, with a clear 5xx', async () => {
      const to = [`bad-${tag()}@example.org`];
      const noFrom = await submitRaw(sender.project.secretKey, to, rawMessage(['To: x@example.org', 'Subject: no from']));
      expect(noFrom).toMatchObject({ code: 554, text: expect.stringContaining('5.6.0 The message has no From header') });

      const injected = await submitRaw(
        sender.project.secretKey,
        to,
        rawMessage([`From: app@${sender.domain}`, 'Subject: =?UTF-8?Q?Hi=0D=0ABcc:_victim@example.org?=']),
      );
      expect(injected).toMatchObject({ code: 554, text: expect.stringContaining('5.6.0 The Subject must not contain CR or LF') });

      const noBoundary = await submitRaw(
        sender.project.secretKey,
        to,
        rawMessage([`From: app@${sender.domain}`, 'Subject: broken', 'Content-Type: multipart/mixed'], '--zz\r\nContent-Type: text/plain\r\n\r\nhi\r\n--zz--'),
      );
      expect(noBoundary.code).toBe(554);
      expect(noBoundary.text).toContain('5.6.0');

      const badFrom = await submitRaw(sender.project.secretKey, to, rawMessage(['From: <<<@@@>', 'Subject: x']));
      expect(badFrom.code).toBe(554);
      expect(await sql(`select id from emails where to_address = ?`, [to[0]])).toHaveLength(0);
    });

    it('refuses attachments past the contract 9 limit with 552 5.3.4', async () => {
      const reply = relay(sender.project.secretKey).sendMail({
        from: `app@${sender.domain}`,
        to: 'x@example.org',
        subject: 'big',
        text: 'big',
        attachments: [{ filename: 'big.bin', content: crypto.randomBytes(ATTACHMENTS_MAX_BYTES + 1) }],
      });
      await expect(reply).rejects.toMatchObject({ responseCode: 552, response: expect.stringContaining(`at most ${ATTACHMENTS_MAX_BYTES} bytes`) });
    });

    it('refuses at the transactional cap and for a disabled project with 550 5.7.1 and the reason', async () => {
      const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
      await setBillingLimits(stack.http, account, project, { transactional: 1 });
      const message = { from: `app@${domain}`, to: [`a-${tag()}@example.org`, `b-${tag()}@example.org`], subject: 's', text: 't' };
      await expect(relay(project.secretKey).sendMail(message)).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringMatching(/5\.7\.1 The transactional cap of 1/),
      });

      await sql(`update projects set disabled = true where id = ?`, [project.id]);
      await expect(relay(project.secretKey).sendMail({ ...message, to: message.to[0] })).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringContaining('5.7.1 This project is disabled'),
      });
    });

    it("answers 421 4.7.0 past the project's rate limit", async () => {
      const { project } = await accountWithProject(stack.http);
      for (let i = 0; i < RATE_LIMIT; i++) await stack.http.get('/emails', { key: project.secretKey });
      const reply = relay(project.secretKey).sendMail({ from: 'app@example.com', to: 'x@example.org', subject: 's', text: 't' });
      await expect(reply).rejects.toMatchObject({ responseCode: 421, response: expect.stringContaining('4.7.0 Rate limit') });
    });
  });
});
