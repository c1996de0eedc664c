import { setBillingLimits } from '../support/accounts';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestAccount, TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { HttpClient } from '../support/http';
import { startApiServer, type RunningApi } from '../../api/server';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';

/**
 * SES receipt notifications (`notificationType: "Received"`, contract 20) on POST /webhooks/sns,
 * signed as SNS signs them with a key the test holds (as test/send/snsWebhook.test.ts does), and
 * received by the API's own inbound reception: the stored message is processed by the stack's
 * worker into records, contacts, events and activity, through the test DNS server. The API reaches
 * PostgreSQL through a proxy the storage-failure test cuts; its inbound SMTP listener receives the
 * same message for comparison.
 */
const CERT_URL = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:mailroom-inbound';

let dns: TestDnsServer;
let databaseProxy: TcpProxy;
let stack: TestStack;
let certDir: string;
let snsKey: crypto.KeyObject;
let snsFetch: (url: string) => Promise<string>;
const received: RecordedEventsBatch[] = [];

beforeAll(async () => {
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-ses-receipt-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sns.key', '-out', 'sns.crt', '-days', '2', '-subj', '/CN=sns.amazonaws.com'],
    { cwd: certDir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const cert = fs.readFileSync(path.join(certDir, 'sns.crt'), 'utf8');
  snsKey = crypto.createPrivateKey(fs.readFileSync(path.join(certDir, 'sns.key')));
  snsFetch = async (url: string) => {
    if (url === CERT_URL) return cert;
    throw new Error(`no answer for ${url}`);
  };
  dns = await startTestDnsServer();
  const server = new URL(process.env.MAILROOM_TEST_PG_SERVER_URL!);
  databaseProxy = await startTcpProxy(`${server.hostname}:${server.port || 5432}`);
  stack = await startTestStack({
    inboundSmtp: true,
    snsFetch,
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' },
    apiDatabaseUrl: (url) => {
      const through = new URL(url);
      through.host = databaseProxy.address;
      return through.toString();
    },
  });
  stack.eventTriggers.subscribe(async (batch) => {
    if (batch.events.some((e) => e.name === 'email.received')) received.push(batch);
  });
}, 180_000);

afterAll(async () => {
  databaseProxy?.setMode('pass');
  await stack?.stop();
  await databaseProxy?.close();
  await dns?.close();
  fs.rmSync(certDir, { recursive: true, force: true });
});

/** AWS's string to sign for a Notification, written out here independently of the code under test. */
function signedNotification(messageBody: string, key = snsKey) {
  const message: Record<string, string> = {
    Type: 'Notification',
    MessageId: crypto.randomUUID(),
    TopicArn: TOPIC_ARN,
    Subject: 'Amazon SES Email Receipt Notification',
    Message: messageBody,
    Timestamp: new Date().toISOString(),
    SignatureVersion: '2',
    SigningCertURL: CERT_URL,
    UnsubscribeURL: `https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${TOPIC_ARN}:abc`,
  };
  const toSign = ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'].map((k) => `${k}\n${message[k]}\n`).join('');
  message.Signature = crypto.sign('sha256', Buffer.from(toSign), key).toString('base64');
  return message;
}

/** A message as SES received it for `to` (UTF-8 text, a reply with its quoted history). */
function rawMessage(to: string, options: { subject?: string; messageId?: string } = {}) {
  return [
    'Return-Path: <ada@sender.example.org>',
    'Received: from mail-wr1-f54.google.com (mail-wr1-f54.google.com [209.85.221.54])',
    ' by inbound-smtp.eu-west-1.amazonaws.com with SMTP id o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1',
    ` for ${to}; Wed, 25 Nov 2026 04:00:00 +0000 (UTC)`,
    'From: Ada Lovelace <ada@sender.example.org>',
    `To: ${to}, someone@elsewhere.example.net`,
    `Subject: ${options.subject ?? 'Où est ma commande ?'}`,
    `Message-ID: <${options.messageId ?? 'CAK1x=abc@mail.gmail.com'}>`,
    'Date: Wed, 25 Nov 2026 04:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=UTF-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    'Bonjour, où en est ma commande ?',
    '',
    'Le mar. 24 nov. 2026, Support <support@shop.example> a écrit :',
    '> Votre commande est partie.',
    '',
  ].join('\r\n');
}

const sesMessageId = () => crypto.randomBytes(20).toString('hex');

/** A "Received" notification as SES's SNS action publishes it (content inline). */
function receivedNotice(options: {
  raw: string;
  recipients: unknown;
  messageId?: string;
  encoding?: 'UTF8' | 'BASE64';
  content?: string | null;
  actionType?: string;
}) {
  const encoding = options.encoding ?? 'UTF8';
  const content = options.content === undefined ? (encoding === 'BASE64' ? Buffer.from(options.raw).toString('base64') : options.raw) : options.content;
  const messageId = options.messageId ?? sesMessageId();
  return JSON.stringify({
    notificationType: 'Received',
    mail: {
      timestamp: '2026-11-25T04:00:00.123Z',
      source: 'ada@sender.example.org',
      messageId,
      destination: options.recipients,
      headersTruncated: false,
      headers: [{ name: 'From', value: 'Ada Lovelace <ada@sender.example.org>' }],
      commonHeaders: { returnPath: 'ada@sender.example.org', from: ['Ada Lovelace <ada@sender.example.org>'], subject: 'Où est ma commande ?' },
    },
    receipt: {
      timestamp: '2026-11-25T04:00:00.123Z',
      processingTimeMillis: 574,
      recipients: options.recipients,
      spamVerdict: { status: 'PASS' },
      virusVerdict: { status: 'PASS' },
      spfVerdict: { status: 'PASS' },
      dkimVerdict: { status: 'GRAY' },
      dmarcVerdict: { status: 'PASS' },
      action:
        options.actionType === 'S3'
          ? { type: 'S3', topicArn: TOPIC_ARN, bucketName: 'mail', objectKey: messageId }
          : { type: 'SNS', topicArn: TOPIC_ARN, encoding },
    },
    ...(content === null ? {} : { content }),
  });
}

const post = (message: Record<string, string>, client: HttpClient = stack.http) =>
  client.request('POST', '/webhooks/sns', { rawBody: JSON.stringify(message), headers: { 'Content-Type': 'text/plain; charset=UTF-8' } });

/** The stored messages SES handed over under `messageId`, and whether each is processed. */
const storedMessages = (messageId: string) =>
  stack.orm.em
    .fork()
    .execute<Array<{ id: string; status: string }>>(`select id, status from inbound_messages where provider = 'ses' and provider_message_id = ?`, [messageId]);

/** Waits until the message SES handed over under `messageId` is processed: from then on its records are all there. */
async function processed(messageId: string) {
  return eventually(async () => {
    const rows = await storedMessages(messageId);
    expect(rows.map((r) => r.status)).toEqual(['PROCESSED']);
    return rows[0].id;
  }, 60_000);
}

async function inboundEmails(project: TestProject) {
  const res = await stack.http.get('/emails?source=INBOUND', { key: project.secretKey });
  expect(res.status).toBe(200);
  return res.body.data as Array<Record<string, any>>;
}

const setInboundCap = (account: TestAccount, project: TestProject, inbound: number | null) => setBillingLimits(stack.http, account, project, { inbound });

describe('SES receipt notifications', () => {
  it('records a message for a verified domain as the SMTP listener does: contact, INBOUND record, email.received, activity (UTF8 and BASE64)', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const to = `support+t-7@${domain}`;
    const raw = rawMessage(to);
    const utf8Id = sesMessageId();
    const res = await post(signedNotification(receivedNotice({ raw, recipients: [to], messageId: utf8Id })));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, result: 'received' });
    await processed(utf8Id);

    const [email] = await inboundEmails(project);
    expect(email).toMatchObject({
      source: 'INBOUND',
      status: 'RECEIVED',
      from: 'ada@sender.example.org',
      to,
      subject: 'Où est ma commande ?',
      messageId: 'CAK1x=abc@mail.gmail.com',
      // SES's verdicts: it judged SPF against the client it spoke with (GRAY: not signed).
      auth: { spf: 'pass', dkim: 'none', dmarc: 'pass' },
      error: null,
    });
    const contact = await stack.http.get(`/contacts/${email.contactId}`, { key: project.secretKey });
    expect(contact.body).toMatchObject({ email: 'ada@sender.example.org', subscribed: false });

    const detail = await stack.http.get(`/emails/${email.id}`, { key: project.secretKey });
    expect(detail.body.text).toContain('Bonjour, où en est ma commande ?');
    const event = detail.body.events.find((e: { name: string }) => e.name === 'email.received');
    expect(event.data).toEqual({
      emailId: email.id,
      from: 'ada@sender.example.org',
      to,
      subject: 'Où est ma commande ?',
      messageId: 'CAK1x=abc@mail.gmail.com',
      spf: 'pass',
      dkim: 'none',
      dmarc: 'pass',
      attachments: 0,
      text: detail.body.text,
      mailboxHash: 't-7',
      replyText: 'Bonjour, où en est ma commande ?',
    });
    // The bytes exactly as SES received them.
    const stored = await stack.http.get(`/emails/${email.id}/raw`, { key: project.secretKey });
    expect(Buffer.from(stored.text, 'utf8').equals(Buffer.from(raw, 'utf8'))).toBe(true);
    expect(received.some((b) => b.projectId === project.id && b.events.some((e) => e.name === 'email.received' && e.contactId === email.contactId))).toBe(true);
    const activity = await stack.http.get('/activity?types=email.received', { key: project.secretKey });
    expect(activity.body.data).toEqual([expect.objectContaining({ type: 'email.received', contactId: email.contactId })]);

    const base64Id = sesMessageId();
    const again = await post(signedNotification(receivedNotice({ raw, recipients: [to], messageId: base64Id, encoding: 'BASE64' })));
    expect(again.body.result).toBe('received');
    await processed(base64Id);
    const both = await inboundEmails(project);
    expect(both).toHaveLength(2);
    const base64Raw = await stack.http.get(`/emails/${both[0].id}/raw`, { key: project.secretKey });
    expect(base64Raw.text).toBe(stored.text);

    // The same bytes through the inbound SMTP listener give the same record and event, but for
    // the verdicts, which the listener computes itself (the test DNS server has no records for the sender).
    const { project: viaSmtp, domain: smtpDomain } = await projectWithVerifiedDomain(stack, dns);
    const smtpTo = `support+t-7@${smtpDomain}`;
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: stack.api.smtp.inbound!.port, secure: false, ignoreTLS: true });
    await transport.sendMail({ envelope: { from: 'ada@sender.example.org', to: [smtpTo] }, raw: rawMessage(smtpTo) });
    const smtpEmail = await eventually(async () => {
      const [found] = await inboundEmails(viaSmtp);
      expect(found).toBeDefined();
      return found;
    }, 60_000);
    const smtpDetail = await stack.http.get(`/emails/${smtpEmail.id}`, { key: viaSmtp.secretKey });
    // Everything but ids, times and the verdicts, with each project's domain written the same way.
    const comparable = (body: Record<string, any>, ownDomain: string) => {
      const same = JSON.parse(JSON.stringify(body).split(ownDomain).join('DOMAIN'));
      const { id: _id, projectId: _p, contactId: _c, auth: _a, createdAt: _t, ...rest } = same;
      return {
        ...rest,
        events: same.events.map((e: Record<string, any>) => {
          const { emailId: _e, spf: _s, dkim: _d, dmarc: _m, ...data } = e.data;
          return { name: e.name, data };
        }),
      };
    };
    expect(comparable(detail.body, domain)).toEqual(comparable(smtpDetail.body, smtpDomain));
  });

  it('stores and records the same notice once, delivered twice in a row or at the same time to two API processes', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const to = `orders@${domain}`;
    const sequential = sesMessageId();
    const first = await post(signedNotification(receivedNotice({ raw: rawMessage(to), recipients: [to], messageId: sequential })));
    expect(first.body.result).toBe('received');
    // SNS's redelivery: another SNS message, the same SES message.
    const second = await post(signedNotification(receivedNotice({ raw: rawMessage(to), recipients: [to], messageId: sequential })));
    expect(second.status).toBe(200);
    expect(second.body.result).toBe('duplicate');
    await processed(sequential);

    // A second API process on the same database: each has its own reception, the database decides.
    const other: RunningApi = await startApiServer(stack.config, stack.logger, { host: '127.0.0.1', eventTriggers: stack.eventTriggers, snsFetch });
    try {
      const otherHttp = new HttpClient(other.url);
      const concurrent = sesMessageId();
      const notice = receivedNotice({
        raw: rawMessage(to, { subject: 'At once', messageId: 'at-once@sender.example.org' }),
        recipients: [to],
        messageId: concurrent,
      });
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => post(signedNotification(notice), i % 2 ? otherHttp : stack.http)));
      expect(answers.map((a) => a.status)).toEqual(new Array(8).fill(200));
      expect(answers.map((a) => a.body.result).sort()).toEqual(['received', ...new Array(7).fill('duplicate')].sort());
      await processed(concurrent);
    } finally {
      await other.close();
    }
    const emails = await inboundEmails(project);
    expect(emails.map((e) => e.subject).sort()).toEqual(['At once', 'Où est ma commande ?']);
    const [{ events }] = await stack.orm.em
      .fork()
      .execute(`select count(*)::int as events from events where project_id = ? and name = 'email.received'`, [project.id]);
    expect(events).toBe(2);
  });

  it('takes only recipients on verified domains; with none it stores nothing', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const mixed = sesMessageId();
    const res = await post(
      signedNotification(
        receivedNotice({
          raw: rawMessage(`support@${domain}`),
          recipients: [`support@${domain}`, `SUPPORT@${domain.toUpperCase()}`, 'x@unverified.example.net', `x@sub.${domain}`],
          messageId: mixed,
        }),
      ),
    );
    expect(res.body.result).toBe('received');
    const messageRow = await processed(mixed);
    const emails = await inboundEmails(project);
    expect(emails.map((e) => e.to)).toEqual([`support@${domain}`]);
    const [{ copies }] = await stack.orm.em.fork().execute(`select count(*)::int as copies from emails where inbound_message_id = ?`, [messageRow]);
    expect(copies).toBe(1);

    const none = sesMessageId();
    const ignored = await post(
      signedNotification(receivedNotice({ raw: rawMessage('x@unverified.example.net'), recipients: ['x@unverified.example.net'], messageId: none })),
    );
    expect(ignored.status).toBe(200);
    expect(ignored.body.result).toBe('ignored');
    // The answer comes after storing: nothing was stored for it.
    expect(await storedMessages(none)).toEqual([]);
  });

  it('records a message for a project at its inbound cap without email.received, saying why, and counts it', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setInboundCap(account, project, 1);
    const to = `sales@${domain}`;
    const within = sesMessageId();
    await post(signedNotification(receivedNotice({ raw: rawMessage(to, { subject: 'First' }), recipients: [to], messageId: within })));
    await processed(within);
    const past = sesMessageId();
    const res = await post(
      signedNotification(
        receivedNotice({ raw: rawMessage(to, { subject: 'Second', messageId: 'second@sender.example.org' }), recipients: [to], messageId: past }),
      ),
    );
    // Not a refusal: SES took the message and cannot be asked to keep it.
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('received');
    await processed(past);

    const emails = await inboundEmails(project);
    const bySubject = Object.fromEntries(emails.map((e) => [e.subject, e]));
    expect(bySubject.First).toMatchObject({ status: 'RECEIVED', error: null });
    expect(bySubject.Second).toMatchObject({ status: 'RECEIVED', error: expect.stringContaining('inbound cap of 1') });
    expect(bySubject.Second.error).toMatch(/without email\.received/);
    // The record and its event are written in one transaction: the message processed, both are settled.
    expect((await stack.http.get(`/emails/${bySubject.First.id}`, { key: project.secretKey })).body.events).toEqual([
      expect.objectContaining({ name: 'email.received' }),
    ]);
    expect((await stack.http.get(`/emails/${bySubject.Second.id}`, { key: project.secretKey })).body.events).toEqual([]);
    const activity = await stack.http.get('/activity?types=email.received', { key: project.secretKey });
    expect(activity.body.data).toHaveLength(1);
    const limits = await stack.http.get(`/users/@me/projects/${project.id}/billing-limits`, { cookie: account.cookie });
    expect(limits.body.inbound).toMatchObject({ limit: 1, usage: 2, isBlocked: true });
  });

  it('answers 400 for a malformed receipt, 200 ignored for one without inline content, and stores nothing', async () => {
    const { domain } = await projectWithVerifiedDomain(stack, dns);
    const to = `support@${domain}`;
    const raw = rawMessage(to);
    const bad = [
      receivedNotice({ raw, recipients: [] }),
      receivedNotice({ raw, recipients: to }),
      receivedNotice({ raw, recipients: [to], content: 42 as unknown as string }),
      receivedNotice({ raw, recipients: [to], encoding: 'BASE64', content: 'this is not base64!' }),
    ];
    for (const body of bad) {
      const res = await post(signedNotification(body));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ message: expect.stringContaining('The SES receipt notification is not valid') });
      expect(await storedMessages(JSON.parse(body).mail.messageId)).toEqual([]);
    }
    const s3Id = sesMessageId();
    const s3 = await post(signedNotification(receivedNotice({ raw, recipients: [to], actionType: 'S3', content: null, messageId: s3Id })));
    expect(s3.status).toBe(200);
    expect(s3.body.result).toBe('ignored');
    expect(await storedMessages(s3Id)).toEqual([]);
  });

  it('refuses a receipt whose signature does not verify (403), before reading it', async () => {
    const { domain } = await projectWithVerifiedDomain(stack, dns);
    const to = `support@${domain}`;
    const forgedId = sesMessageId();
    const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    expect((await post(signedNotification(receivedNotice({ raw: rawMessage(to), recipients: [to], messageId: forgedId }), other))).status).toBe(403);
    const altered = signedNotification(receivedNotice({ raw: rawMessage(to), recipients: [to], messageId: forgedId }));
    altered.Message = altered.Message.replace(`"${to}"`, `"sales@${domain}"`);
    expect((await post(altered)).status).toBe(403);
    expect(await storedMessages(forgedId)).toEqual([]);
  });

  it('answers 503 with Retry-After while the message cannot be stored, and takes the notice SNS delivers again', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const to = `support@${domain}`;
    const messageId = sesMessageId();
    const notice = receivedNotice({ raw: rawMessage(to), recipients: [to], messageId });
    databaseProxy.setMode('refuse');
    let away;
    try {
      away = await post(signedNotification(notice));
    } finally {
      databaseProxy.setMode('pass');
    }
    expect(away.status).toBe(503);
    expect(away.headers.get('retry-after')).toBe('60');
    expect(await storedMessages(messageId)).toEqual([]);
    const retried = await eventually(async () => {
      const res = await post(signedNotification(notice));
      expect(res.status).toBe(200);
      return res;
    }, 30_000);
    expect(retried.body.result).toBe('received');
    await processed(messageId);
    expect(await inboundEmails(project)).toHaveLength(1);
  });
});
