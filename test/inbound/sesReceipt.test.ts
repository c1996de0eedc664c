import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestStack, type TestStack } from '../support/testStack';
import { HttpClient } from '../support/http';
import { startApiServer, type RunningApi } from '../../api/server';
import type { InboundReceiptPorts, ReceiptEnvelope, ReceiptRecipient } from '../../services/inbound/inboundReceipt';

/**
 * SES receipt notifications (`notificationType: "Received"`) on POST /webhooks/sns, signed as SNS
 * signs them with a key the test holds (as test/send/snsWebhook.test.ts does). The inbound
 * reception they are handed to is the inbound listener's (branch wip/inbound); until it is
 * merged, `ports` below stands in for it at the ApiDeps.inboundReceipt seam: it receives mail for
 * one domain and keeps what it is asked to store, so what the route hands over can be checked.
 */
const CERT_URL = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:mailroom-inbound';
const RECEIVING_DOMAIN = 'inbound.example.com';
const PROJECT_ID = crypto.randomUUID();

let stack: TestStack;
let api: RunningApi;
let apiWithoutReception: RunningApi;
let http: HttpClient;
let httpWithoutReception: HttpClient;
let certDir: string;
let snsKey: crypto.KeyObject;
const stored: Array<{ raw: Buffer; envelope: ReceiptEnvelope }> = [];
let storeFails = false;

const ports: InboundReceiptPorts = {
  async projectsReceiving(address: string): Promise<ReceiptRecipient | null> {
    const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
    return domain === RECEIVING_DOMAIN ? { address, projectIds: [PROJECT_ID], returnPath: false } : null;
  },
  async store(raw: Buffer, envelope: ReceiptEnvelope): Promise<string> {
    if (storeFails) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    stored.push({ raw, envelope });
    return crypto.randomUUID();
  },
};

beforeAll(async () => {
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-ses-receipt-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sns.key', '-out', 'sns.crt', '-days', '2', '-subj', '/CN=sns.amazonaws.com'],
    { cwd: certDir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const cert = fs.readFileSync(path.join(certDir, 'sns.crt'), 'utf8');
  snsKey = crypto.createPrivateKey(fs.readFileSync(path.join(certDir, 'sns.key')));
  stack = await startTestStack({ worker: false });
  const snsFetch = async (url: string) => {
    if (url === CERT_URL) return cert;
    throw new Error(`no answer for ${url}`);
  };
  api = await startApiServer(stack.config, stack.logger, { host: '127.0.0.1', eventTriggers: stack.eventTriggers, snsFetch, inboundReceipt: ports });
  apiWithoutReception = await startApiServer(stack.config, stack.logger, { host: '127.0.0.1', eventTriggers: stack.eventTriggers, snsFetch });
  http = new HttpClient(api.url);
  httpWithoutReception = new HttpClient(apiWithoutReception.url);
});

afterAll(async () => {
  await api?.close();
  await apiWithoutReception?.close();
  await stack?.stop();
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

const RAW = [
  'Return-Path: <ada@sender.example.org>',
  'Received: from mail-wr1-f54.google.com (mail-wr1-f54.google.com [209.85.221.54])',
  ' by inbound-smtp.eu-west-1.amazonaws.com with SMTP id o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1',
  ' for support@inbound.example.com; Wed, 25 Nov 2026 04:00:00 +0000 (UTC)',
  'From: Ada Lovelace <ada@sender.example.org>',
  'To: support@inbound.example.com, someone@elsewhere.example.net',
  'Subject: Où est ma commande ?',
  'Message-ID: <CAK1x=abc@mail.gmail.com>',
  'Date: Wed, 25 Nov 2026 04:00:00 +0000',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=UTF-8',
  'Content-Transfer-Encoding: 8bit',
  '',
  'Bonjour, où en est ma commande ?',
  '',
].join('\r\n');

/** A "Received" notification as SES's SNS action publishes it (content inline). */
function receivedNotice(options: { encoding?: 'UTF8' | 'BASE64'; content?: string | null; recipients?: unknown; actionType?: string } = {}) {
  const encoding = options.encoding ?? 'UTF8';
  const content = options.content === undefined ? (encoding === 'BASE64' ? Buffer.from(RAW).toString('base64') : RAW) : options.content;
  return JSON.stringify({
    notificationType: 'Received',
    mail: {
      timestamp: '2026-11-25T04:00:00.123Z',
      source: 'ada@sender.example.org',
      messageId: 'o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1',
      destination: ['support@inbound.example.com', 'someone@elsewhere.example.net'],
      headersTruncated: false,
      headers: [
        { name: 'From', value: 'Ada Lovelace <ada@sender.example.org>' },
        { name: 'Message-ID', value: '<CAK1x=abc@mail.gmail.com>' },
      ],
      commonHeaders: {
        returnPath: 'ada@sender.example.org',
        from: ['Ada Lovelace <ada@sender.example.org>'],
        to: ['support@inbound.example.com', 'someone@elsewhere.example.net'],
        messageId: '<CAK1x=abc@mail.gmail.com>',
        subject: 'Où est ma commande ?',
      },
    },
    receipt: {
      timestamp: '2026-11-25T04:00:00.123Z',
      processingTimeMillis: 574,
      recipients: options.recipients ?? ['support@inbound.example.com'],
      spamVerdict: { status: 'PASS' },
      virusVerdict: { status: 'PASS' },
      spfVerdict: { status: 'PASS' },
      dkimVerdict: { status: 'GRAY' },
      dmarcVerdict: { status: 'PASS' },
      action:
        options.actionType === 'S3'
          ? { type: 'S3', topicArn: TOPIC_ARN, bucketName: 'mail', objectKey: 'o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1' }
          : { type: 'SNS', topicArn: TOPIC_ARN, encoding },
    },
    ...(content === null ? {} : { content }),
  });
}

const post = (client: HttpClient, message: Record<string, string>) =>
  client.request('POST', '/webhooks/sns', { rawBody: JSON.stringify(message), headers: { 'Content-Type': 'text/plain; charset=UTF-8' } });

describe('SES receipt notifications', () => {
  beforeEach(() => {
    stored.length = 0;
    storeFails = false;
  });

  it('hands the message, its envelope sender and the receipt recipients to the inbound reception (UTF8 and BASE64)', async () => {
    for (const encoding of ['UTF8', 'BASE64'] as const) {
      const res = await post(http, signedNotification(receivedNotice({ encoding })));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, result: 'received' });
    }
    expect(stored).toHaveLength(2);
    for (const { raw, envelope } of stored) {
      // The bytes as SES received them: UTF-8 text kept exactly.
      expect(raw.equals(Buffer.from(RAW, 'utf8'))).toBe(true);
      expect(envelope).toEqual({
        mailFrom: 'ada@sender.example.org',
        // The receipt's recipients (this domain's), not every To address.
        recipients: [{ address: 'support@inbound.example.com', projectIds: [PROJECT_ID], returnPath: false }],
        remoteAddress: '',
        helo: '',
        provider: {
          name: 'ses',
          messageId: 'o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1',
          verdicts: { spf: 'pass', dkim: 'gray', dmarc: 'pass', spam: 'pass', virus: 'pass' },
        },
      });
    }
  });

  it('keeps only recipients Mailroom receives mail for; with none left it stores nothing', async () => {
    const mixed = await post(
      http,
      signedNotification(receivedNotice({ recipients: ['support@inbound.example.com', 'SUPPORT@inbound.example.com', 'x@other.example.net'] })),
    );
    expect(mixed.body.result).toBe('received');
    expect(stored.map((s) => s.envelope.recipients.map((r) => r.address))).toEqual([['support@inbound.example.com']]);
    stored.length = 0;
    const none = await post(http, signedNotification(receivedNotice({ recipients: ['x@other.example.net'] })));
    expect(none.status).toBe(200);
    expect(none.body.result).toBe('ignored');
    expect(stored).toEqual([]);
  });

  it('answers 400 for a malformed receipt, 200 ignored for one without inline content, and stores nothing', async () => {
    const bad = [
      receivedNotice({ recipients: [] }),
      receivedNotice({ recipients: 'support@inbound.example.com' }),
      receivedNotice({ content: 42 as unknown as string }),
      receivedNotice({ encoding: 'BASE64', content: 'this is not base64!' }),
    ];
    for (const body of bad) {
      const res = await post(http, signedNotification(body));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ message: expect.stringContaining('The SES receipt notification is not valid') });
    }
    const s3 = await post(http, signedNotification(receivedNotice({ actionType: 'S3', content: null })));
    expect(s3.status).toBe(200);
    expect(s3.body.result).toBe('ignored');
    expect(stored).toEqual([]);
  });

  it('refuses a receipt whose signature does not verify (403), before reading it', async () => {
    const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const res = await post(http, signedNotification(receivedNotice(), other));
    expect(res.status).toBe(403);
    const altered = signedNotification(receivedNotice());
    altered.Message = altered.Message.replace('support@inbound.example.com', 'sales@inbound.example.com');
    expect((await post(http, altered)).status).toBe(403);
    expect(stored).toEqual([]);
  });

  it('answers 503 (SNS delivers it again) while the message cannot be stored, or when there is no reception', async () => {
    storeFails = true;
    const failing = await post(http, signedNotification(receivedNotice()));
    expect(failing.status).toBe(503);
    expect(failing.headers.get('retry-after')).toBe('60');
    const without = await post(httpWithoutReception, signedNotification(receivedNotice()));
    expect(without.status).toBe(503);
    expect(stored).toEqual([]);
  });
});
