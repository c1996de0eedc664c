import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { HttpClient } from '../support/http';
import { contactSubscribed, emailRow, eventsOf, insertContact, insertSentEmail, suppressions, type EmailFixture } from '../support/emailFixtures';
import { startApiServer, type RunningApi } from '../../api/server';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';

/**
 * The SNS webhook against an API whose SNS fetcher answers with a self-signed certificate made
 * here, so messages are signed exactly as SNS signs them, with a key the test holds.
 */
const CERT_URL = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem';
const GARBAGE_CERT_URL = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-garbage.pem';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:mailroom-ses';

let stack: TestStack;
let api: RunningApi;
let http: HttpClient;
let project: TestProject;
let certDir: string;
let snsKey: crypto.KeyObject;
let otherKey: crypto.KeyObject;
const fetched: string[] = [];
const triggered: RecordedEventsBatch[] = [];

function selfSignedCertificate(dir: string, name: string): { cert: string; key: crypto.KeyObject } {
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', '/CN=sns.amazonaws.com'],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return { cert: fs.readFileSync(path.join(dir, `${name}.crt`), 'utf8'), key: crypto.createPrivateKey(fs.readFileSync(path.join(dir, `${name}.key`))) };
}

beforeAll(async () => {
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-sns-'));
  const sns = selfSignedCertificate(certDir, 'sns');
  snsKey = sns.key;
  otherKey = selfSignedCertificate(certDir, 'other').key;
  stack = await startTestStack({ worker: false });
  stack.eventTriggers.subscribe(async (batch) => void triggered.push(batch));
  api = await startApiServer(stack.config, stack.logger, {
    host: '127.0.0.1',
    eventTriggers: stack.eventTriggers,
    snsFetch: async (url) => {
      fetched.push(url);
      if (url === CERT_URL) return sns.cert;
      if (url === GARBAGE_CERT_URL) return 'this is not a certificate';
      if (url.startsWith('https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription')) return '<ConfirmSubscriptionResponse/>';
      throw new Error(`no answer for ${url}`);
    },
  });
  http = new HttpClient(api.url);
  ({ project } = await accountWithProject(stack.http));
});

afterAll(async () => {
  await api?.close();
  await stack?.stop();
  fs.rmSync(certDir, { recursive: true, force: true });
});

/** AWS's string to sign, written out here independently of the code under test. */
function awsStringToSign(m: Record<string, string>): string {
  const keys =
    m.Type === 'Notification'
      ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
      : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
  return keys
    .filter((k) => m[k] !== undefined)
    .map((k) => `${k}\n${m[k]}\n`)
    .join('');
}

function signed(fields: Record<string, string>, options: { version?: '1' | '2'; key?: crypto.KeyObject; certUrl?: string } = {}) {
  const version = options.version ?? '2';
  const message: Record<string, string> = {
    MessageId: crypto.randomUUID(),
    TopicArn: TOPIC_ARN,
    Timestamp: new Date().toISOString(),
    ...fields,
    SignatureVersion: version,
    SigningCertURL: options.certUrl ?? CERT_URL,
    UnsubscribeURL: `https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${TOPIC_ARN}:abc`,
  };
  message.Signature = crypto.sign(version === '1' ? 'sha1' : 'sha256', Buffer.from(awsStringToSign(message)), options.key ?? snsKey).toString('base64');
  return message;
}

function sesNotice(email: EmailFixture, type: string, body: Record<string, unknown>, ids: { provider?: boolean; header?: 'common' | 'list' } = {}) {
  const messageId = email.messageId;
  return JSON.stringify({
    notificationType: type,
    mail: {
      timestamp: new Date().toISOString(),
      source: 'news@mail.example.com',
      messageId: ids.provider === false ? 'some-other-ses-id' : email.providerMessageId,
      destination: [email.email],
      headersTruncated: false,
      headers: ids.header === 'list' ? [{ name: 'Message-Id', value: messageId.slice(1, -1) }] : [],
      commonHeaders: ids.header === 'common' ? { messageId, subject: 'Hello there' } : { subject: 'Hello there' },
    },
    ...body,
  });
}

const delivery = (email: EmailFixture) => ({
  delivery: { timestamp: new Date().toISOString(), recipients: [email.email], smtpResponse: '250 2.0.0 OK', reportingMTA: 'a8-70.smtp-out.amazonses.com' },
});
const permanentBounce = (email: EmailFixture, address = email.email) => ({
  bounce: {
    bounceType: 'Permanent',
    bounceSubType: 'General',
    bouncedRecipients: [{ emailAddress: address, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' }],
    timestamp: new Date().toISOString(),
    feedbackId: crypto.randomUUID(),
  },
});
const complaint = (email: EmailFixture) => ({
  complaint: {
    complainedRecipients: [{ emailAddress: email.email }],
    complaintFeedbackType: 'abuse',
    timestamp: new Date().toISOString(),
    feedbackId: crypto.randomUUID(),
  },
});

/** As SNS posts: JSON with Content-Type text/plain. */
const post = (message: unknown, contentType = 'text/plain; charset=UTF-8') =>
  http.request('POST', '/webhooks/sns', {
    rawBody: typeof message === 'string' ? message : JSON.stringify(message),
    headers: { 'Content-Type': contentType, 'x-amz-sns-message-type': (message as any)?.Type ?? 'Notification' },
  });

const notification = (
  email: EmailFixture,
  type: string,
  body: Record<string, unknown>,
  options: Parameters<typeof signed>[1] = {},
  ids: Parameters<typeof sesNotice>[3] = {},
) => signed({ Type: 'Notification', Message: sesNotice(email, type, body, ids), Subject: 'Amazon SES Email Event Notification' }, options);

const names = (events: Array<Record<string, any>>) => events.map((e) => e.name);

describe('signatures', () => {
  it('accepts SignatureVersion 2 (SHA256) and 1 (SHA1), fetching the certificate once', async () => {
    const a = await insertSentEmail(stack, project.id);
    const b = await insertSentEmail(stack, project.id);
    const v2 = await post(notification(a, 'Delivery', delivery(a), { version: '2' }));
    expect(v2.status).toBe(200);
    expect(v2.body).toEqual({ received: true, result: 'applied' });
    const v1 = await post(notification(b, 'Delivery', delivery(b), { version: '1' }));
    expect(v1.status).toBe(200);
    expect(v1.body).toEqual({ received: true, result: 'applied' });
    for (const e of [a, b]) expect((await emailRow(stack, e.emailId)).status).toBe('DELIVERED');
    expect(fetched.filter((u) => u === CERT_URL)).toHaveLength(1);
  });

  it('refuses with 403 a message signed by another key, altered after signing, or of an unknown version; nothing changes', async () => {
    const email = await insertSentEmail(stack, project.id);
    const forged = notification(email, 'Complaint', complaint(email), { key: otherKey });
    const altered = notification(email, 'Delivery', delivery(email));
    altered.Message = sesNotice(email, 'Complaint', complaint(email));
    const noSubject = notification(email, 'Delivery', delivery(email));
    delete noSubject.Subject; // Subject was signed: dropping it breaks the signature
    const version3 = { ...notification(email, 'Complaint', complaint(email)), SignatureVersion: '3' };
    const garbage = { ...notification(email, 'Complaint', complaint(email)), Signature: '!!!not base64' };
    for (const message of [forged, altered, noSubject, version3, garbage]) {
      const res = await post(message);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect(await emailRow(stack, email.emailId)).toMatchObject({ status: 'SENT', complained_at: null, delivered_at: null });
    expect(await contactSubscribed(stack, email.contactId)).toBe(true);
    expect(await suppressions(stack, project.id)).toEqual([]);
  });

  it('refuses a certificate URL that is not https on an SNS host, without fetching it', async () => {
    const email = await insertSentEmail(stack, project.id);
    const before = fetched.length;
    for (const certUrl of [
      'http://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem',
      'https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem',
      'https://evil.example/sns.eu-west-1.amazonaws.com/cert.pem',
      'https://s3.amazonaws.com/cert.pem',
      'https://sns.eu-west-1.amazonaws.com:8443/cert.pem',
      'https://user@sns.eu-west-1.amazonaws.com/cert.pem',
      'https://sns.eu-west-1.amazonaws.com/cert.txt',
      'not a url',
    ]) {
      const res = await post(notification(email, 'Complaint', complaint(email), { certUrl }));
      expect(res.status).toBe(403);
    }
    expect(fetched.length).toBe(before);
    expect((await emailRow(stack, email.emailId)).status).toBe('SENT');
  });

  it('refuses a message whose certificate URL does not hold a certificate', async () => {
    const email = await insertSentEmail(stack, project.id);
    const res = await post(notification(email, 'Delivery', delivery(email), { certUrl: GARBAGE_CERT_URL }));
    expect(res.status).toBe(403);
    expect(fetched).toContain(GARBAGE_CERT_URL);
    expect((await emailRow(stack, email.emailId)).status).toBe('SENT');
  });

  it('accepts a China-region certificate host and answers 503 when the certificate cannot be fetched', async () => {
    const email = await insertSentEmail(stack, project.id);
    const res = await post(
      notification(email, 'Delivery', delivery(email), { certUrl: 'https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-x.pem' }),
    );
    // The host passed the check and was fetched; the test fetcher has no answer for it.
    expect(fetched).toContain('https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-x.pem');
    expect(res.status).toBe(503);
    expect((await emailRow(stack, email.emailId)).status).toBe('SENT');
  });

  it('answers 400 for bodies that are not SNS messages and 413 past 256 KB', async () => {
    expect((await post('not json')).status).toBe(400);
    expect((await post({ Type: 'Notification' })).status).toBe(400);
    expect((await post({ ...signed({ Type: 'Bogus', Message: 'x' }) })).status).toBe(400);
    expect((await post([1, 2])).status).toBe(400);
    const big = await post(signed({ Type: 'Notification', Message: 'x'.repeat(300 * 1024) }));
    expect(big.status).toBe(413);
  });

  it('also takes a message sent as application/json', async () => {
    const email = await insertSentEmail(stack, project.id);
    const res = await post(notification(email, 'Delivery', delivery(email)), 'application/json');
    expect(res.status).toBe(200);
    expect((await emailRow(stack, email.emailId)).status).toBe('DELIVERED');
  });
});

describe('SNS_TOPIC_ARNS', () => {
  it('takes messages from the listed topics only (a valid signature proves SNS sent it, not that it is our topic)', async () => {
    const limited = await startApiServer({ ...stack.config, snsTopicArns: [TOPIC_ARN] }, stack.logger, {
      host: '127.0.0.1',
      eventTriggers: stack.eventTriggers,
      snsFetch: async (url) => {
        if (url === CERT_URL) return fs.readFileSync(path.join(certDir, 'sns.crt'), 'utf8');
        if (url.startsWith('https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription')) return '<ConfirmSubscriptionResponse/>';
        throw new Error(`no answer for ${url}`);
      },
    });
    try {
      const limitedHttp = new HttpClient(limited.url);
      const postTo = (message: Record<string, string>) =>
        limitedHttp.request('POST', '/webhooks/sns', { rawBody: JSON.stringify(message), headers: { 'Content-Type': 'text/plain; charset=UTF-8' } });
      const subscribe = (topic: string) =>
        signed({
          Type: 'SubscriptionConfirmation',
          TopicArn: topic,
          Message: 'confirm',
          Token: 't',
          SubscribeURL: `https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${topic}&Token=t`,
        });
      expect((await postTo(subscribe(TOPIC_ARN))).status).toBe(200);
      const foreign = await postTo(subscribe('arn:aws:sns:eu-west-1:999999999999:someone-else'));
      expect(foreign.status).toBe(403);
      expect(foreign.body.error.code).toBe('FORBIDDEN');
    } finally {
      await limited.close();
    }
  });
});

describe('subscription messages', () => {
  it('confirms a subscription by fetching its SubscribeURL', async () => {
    const subscribeUrl = `https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(TOPIC_ARN)}&Token=abc123`;
    const res = await post(
      signed(
        { Type: 'SubscriptionConfirmation', Token: 'abc123', SubscribeURL: subscribeUrl, Message: `You have chosen to subscribe to the topic ${TOPIC_ARN}.` },
        { version: '1' },
      ),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, result: 'subscribed' });
    expect(fetched).toContain(subscribeUrl);
  });

  it('refuses a SubscribeURL off the SNS hosts without fetching it, and a forged confirmation', async () => {
    const evil = 'https://evil.example/?Action=ConfirmSubscription';
    const res = await post(signed({ Type: 'SubscriptionConfirmation', Token: 't', SubscribeURL: evil, Message: 'subscribe' }));
    expect(res.status).toBe(400);
    const good = 'https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=forged';
    const forged = await post(signed({ Type: 'SubscriptionConfirmation', Token: 'forged', SubscribeURL: good, Message: 'subscribe' }, { key: otherKey }));
    expect(forged.status).toBe(403);
    expect(fetched).not.toContain(evil);
    expect(fetched).not.toContain(good);
  });

  it('acknowledges an unsubscribe confirmation and logs it', async () => {
    const res = await post(
      signed({
        Type: 'UnsubscribeConfirmation',
        Token: 't',
        SubscribeURL: 'https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=t',
        Message: 'unsubscribed',
      }),
    );
    expect(res.status).toBe(200);
    expect(stack.logs.some((l) => String(l.msg).includes('unsubscribed from the topic'))).toBe(true);
  });
});

describe('SES notifications', () => {
  it('Delivery: DELIVERED, delivered_at and email.delivered once, also on replay', async () => {
    const email = await insertSentEmail(stack, project.id, { subject: 'Receipt' });
    const message = notification(email, 'Delivery', delivery(email));
    for (let i = 0; i < 3; i++) expect((await post(message)).status).toBe(200);
    const row = await emailRow(stack, email.emailId);
    expect(row.status).toBe('DELIVERED');
    expect(row.delivered_at).not.toBeNull();
    const events = await eventsOf(stack, { emailId: email.emailId });
    expect(events).toEqual([
      {
        name: 'email.delivered',
        source: 'SYSTEM',
        email_id: email.emailId,
        contact_id: email.contactId,
        data: { emailId: email.emailId, subject: 'Receipt', templateId: null, campaignId: null },
      },
    ]);
    expect(
      triggered
        .flatMap((b) => b.events)
        .filter((e) => e.contactId === email.contactId)
        .map((e) => e.name),
    ).toEqual(['email.delivered']);
  });

  it('finds the email by our Message-ID (common headers or header list) when SES id is unknown', async () => {
    const a = await insertSentEmail(stack, project.id);
    const b = await insertSentEmail(stack, project.id);
    expect((await post(notification(a, 'Delivery', delivery(a), {}, { provider: false, header: 'common' }))).body.result).toBe('applied');
    expect((await post(notification(b, 'Delivery', delivery(b), {}, { provider: false, header: 'list' }))).body.result).toBe('applied');
    expect((await emailRow(stack, a.emailId)).status).toBe('DELIVERED');
    expect((await emailRow(stack, b.emailId)).status).toBe('DELIVERED');
  });

  it('a Delivery arriving after an open does not move the email back', async () => {
    const email = await insertSentEmail(stack, project.id, { status: 'OPENED' });
    expect((await post(notification(email, 'Delivery', delivery(email)))).status).toBe(200);
    const row = await emailRow(stack, email.emailId);
    expect(row.status).toBe('OPENED');
    expect(row.delivered_at).not.toBeNull();
  });

  it('Permanent bounce: BOUNCED, suppressed, contact unsubscribed, email.bounced; a replay changes nothing more', async () => {
    const email = await insertSentEmail(stack, project.id, { email: 'Gone@Example.com', status: 'DELIVERED' });
    const message = notification(email, 'Bounce', permanentBounce(email, 'gone@example.com'), { version: '1' });
    expect((await post(message)).body).toEqual({ received: true, result: 'applied' });
    expect((await post(message)).status).toBe(200);

    const row = await emailRow(stack, email.emailId);
    expect(row.status).toBe('BOUNCED');
    expect(row.bounced_at).not.toBeNull();
    expect(row.error).toContain('550 5.1.1 user unknown');
    expect((await suppressions(stack, project.id)).filter((s) => s.email === 'gone@example.com')).toEqual([
      { email: 'gone@example.com', reason: 'BOUNCE', email_id: email.emailId, detail: 'smtp; 550 5.1.1 user unknown' },
    ]);
    expect(await contactSubscribed(stack, email.contactId)).toBe(false);
    const events = await eventsOf(stack, { contactId: email.contactId });
    expect(names(events)).toEqual(['email.bounced', 'contact.unsubscribed']);
    expect(events[0].data).toEqual({
      emailId: email.emailId,
      subject: 'Hello there',
      templateId: null,
      campaignId: null,
      bounceType: 'Permanent',
      bounceSubType: 'General',
      diagnostic: 'smtp; 550 5.1.1 user unknown',
    });
    expect(events[1].data).toEqual({ source: 'bounce' });
    // The contact is listed unsubscribed through the API too.
    const contact = await stack.http.get(`/contacts/${email.contactId}`, { key: project.secretKey });
    expect(contact.body.subscribed).toBe(false);

    // The reader subscribes again later; SNS redelivering the old notice does not undo that.
    const resubscribed = await stack.http.patch(`/contacts/${email.contactId}`, { subscribed: true }, { key: project.secretKey });
    expect(resubscribed.body.subscribed).toBe(true);
    expect((await post(message)).status).toBe(200);
    expect(await contactSubscribed(stack, email.contactId)).toBe(true);
    expect(names(await eventsOf(stack, { contactId: email.contactId }))).toEqual(['email.bounced', 'contact.unsubscribed', 'contact.subscribed']);
  });

  it('a bounce naming only other addresses suppresses nobody', async () => {
    const email = await insertSentEmail(stack, project.id);
    const victim = await insertContact(stack, project.id, { email: 'victim@example.com' });
    expect((await post(notification(email, 'Bounce', permanentBounce(email, 'victim@example.com')))).body.result).toBe('ignored');
    expect((await suppressions(stack, project.id)).map((s) => s.email)).not.toContain('victim@example.com');
    expect(await contactSubscribed(stack, victim.contactId)).toBe(true);
    expect((await emailRow(stack, email.emailId)).status).toBe('SENT');
  });

  it('Transient bounce: the diagnostic is recorded; no status change, suppression or event', async () => {
    const email = await insertSentEmail(stack, project.id);
    const body = {
      bounce: {
        bounceType: 'Transient',
        bounceSubType: 'MailboxFull',
        bouncedRecipients: [{ emailAddress: email.email, diagnosticCode: 'smtp; 452 4.2.2 mailbox full' }],
      },
    };
    expect((await post(notification(email, 'Bounce', body))).status).toBe(200);
    const row = await emailRow(stack, email.emailId);
    expect(row).toMatchObject({ status: 'SENT', bounced_at: null });
    expect(row.error).toBe('Soft bounce (Transient/MailboxFull): smtp; 452 4.2.2 mailbox full');
    expect((await suppressions(stack, project.id)).map((s) => s.email)).not.toContain(email.email);
    expect(await contactSubscribed(stack, email.contactId)).toBe(true);
    expect(await eventsOf(stack, { contactId: email.contactId })).toEqual([]);
  });

  it('Complaint: COMPLAINED, suppressed as COMPLAINT, unsubscribed, email.complained once (configuration-set eventType form)', async () => {
    const email = await insertSentEmail(stack, project.id, { status: 'CLICKED' });
    const messageBody = JSON.parse(sesNotice(email, 'Complaint', complaint(email)));
    delete messageBody.notificationType;
    messageBody.eventType = 'Complaint';
    const message = signed({ Type: 'Notification', Message: JSON.stringify(messageBody) });
    expect((await post(message)).body.result).toBe('applied');
    expect((await post(message)).status).toBe(200);
    const row = await emailRow(stack, email.emailId);
    expect(row.status).toBe('COMPLAINED');
    expect(row.complained_at).not.toBeNull();
    expect((await suppressions(stack, project.id)).filter((s) => s.email === email.email)).toEqual([
      { email: email.email, reason: 'COMPLAINT', email_id: email.emailId, detail: 'abuse' },
    ]);
    expect(await contactSubscribed(stack, email.contactId)).toBe(false);
    expect(names(await eventsOf(stack, { contactId: email.contactId }))).toEqual(['email.complained', 'contact.unsubscribed']);
  });

  it('suppresses only in the email project: the same address elsewhere is untouched', async () => {
    const { project: other } = await accountWithProject(stack.http);
    const email = await insertSentEmail(stack, project.id, { email: 'shared@example.com' });
    const elsewhere = await insertContact(stack, other.id, { email: 'shared@example.com' });
    expect((await post(notification(email, 'Bounce', permanentBounce(email)))).status).toBe(200);
    expect(await suppressions(stack, other.id)).toEqual([]);
    expect(await contactSubscribed(stack, elsewhere.contactId)).toBe(true);
  });

  it('answers 200 and changes nothing for an unknown email, a non-SES message and SES event types not acted on', async () => {
    const email = await insertSentEmail(stack, project.id);
    const stranger = { ...email, providerMessageId: 'unknown-ses-id', messageId: '<unknown@example.com>' };
    expect((await post(notification(stranger, 'Bounce', permanentBounce(email), {}, { header: 'common' }))).body).toEqual({
      received: true,
      result: 'unknown-email',
    });
    expect((await post(signed({ Type: 'Notification', Message: 'plain text from another publisher' }))).body.result).toBe('ignored');
    expect((await post(notification(email, 'Send', {}))).body.result).toBe('ignored');
    expect(await emailRow(stack, email.emailId)).toMatchObject({ status: 'SENT' });
    expect(await suppressions(stack, project.id)).not.toContainEqual(expect.objectContaining({ email: email.email }));
  });
});
