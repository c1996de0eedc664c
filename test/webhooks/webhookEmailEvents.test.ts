import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../support/smtpServer';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { expectPayload, hookFor, messageOf, type TestHook } from '../support/webhookDeliveries';

/**
 * Outbound webhooks (contract 18) for the email events, each recorded by the path that really
 * records it: a send through a verified sender domain to a real SMTP server, the tracking pixel
 * and redirect of the mail received, the unsubscribe link it carries, a relay's permanent refusal,
 * SES notices through SNS (signed with a key the test holds, as snsWebhook.test.ts does), a DSN
 * and an ARF report to the inbound SMTP listener, and mail arriving there.
 */
const MX_HOST = 'mx.mailroom.test';
const REFUSING = 'nobody@example.org';
const CERT_URL = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem';

let certDir: string;
let snsKey: crypto.KeyObject;
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let receiver: WebhookReceiver;
let stack: TestStack;

beforeAll(async () => {
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-sns-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sns.key', '-out', 'sns.crt', '-days', '2', '-subj', '/CN=sns.amazonaws.com'],
    {
      cwd: certDir,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const snsCert = fs.readFileSync(path.join(certDir, 'sns.crt'), 'utf8');
  snsKey = crypto.createPrivateKey(fs.readFileSync(path.join(certDir, 'sns.key')));
  dns = await startTestDnsServer();
  smtp = await startSmtpServer({ rejectRecipients: [REFUSING] });
  receiver = await startWebhookReceiver();
  stack = await startTestStack({
    inboundSmtp: true,
    snsFetch: async (url) => {
      if (url === CERT_URL) return snsCert;
      throw new Error(`no answer for ${url}`);
    },
    // The receiver listens on 127.0.0.1.
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, INBOUND_MX_HOST: MX_HOST },
  });
});

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  await smtp?.close();
  await dns?.close();
  if (certDir) fs.rmSync(certDir, { recursive: true, force: true });
});

interface Sender {
  project: TestProject;
  domain: string;
  hook: TestHook;
}

/** A project with a verified sender domain and an endpoint taking every event. */
async function newSender(): Promise<Sender> {
  const { project, domain } = await projectWithVerifiedDomain(stack, dns);
  return { project, domain, hook: await hookFor(stack, receiver, project) };
}

const recipient = () => `reader-${crypto.randomBytes(4).toString('hex')}@example.org`;
const mailTo = (address: string) => smtp.waitFor((m) => m.envelopeTo.includes(address));
/** A link of the mail under PUBLIC_URL, as a path of the API under test. */
const apiPath = (url: string) => url.slice(stack.config.publicUrl.length);

async function send(sender: Sender, body: Record<string, unknown>) {
  const res = await stack.http.post('/v1/send', body, { key: sender.project.secretKey });
  expect(res.status).toBe(200);
  const [sent] = res.body.data.emails as Array<{ email: string; contact: { id: string; email: string } }>;
  return { emailId: sent.email, contact: sent.contact };
}

describe('sending', () => {
  it('a template send: email.sent, then email.opened and email.clicked from the mail received, then contact.unsubscribed by its link', async () => {
    const sender = await newSender();
    const template = await stack.http.post(
      '/templates',
      {
        name: 'Weekly',
        subject: 'News for {{name}}',
        body: '<p>Read on, {{name}}: <a href="https://acme.example/read">the article</a></p>',
        from: `news@${sender.domain}`,
        type: 'MARKETING',
      },
      { key: sender.project.secretKey },
    );
    expect(template.status).toBe(201);
    const to = recipient();
    const { emailId, contact } = await send(sender, { to, template: template.body.id, data: { name: 'Ada' }, subscribed: true });
    const email = { id: emailId, subject: 'News for Ada', templateId: template.body.id as string };

    const sent = await messageOf(sender.hook, 'email.sent');
    await expectPayload(stack, sender.hook, sent.payload, { source: 'system', contact, email });

    // The reader's client loads the pixel and follows the link, as written in the mail received.
    const mail = await mailTo(to);
    const html = String(mail.parsed.html);
    const pixel = html.match(/src="(http:\/\/mailroom\.test\/t\/o\/[^"]+\.gif)"/)?.[1];
    const click = html.match(/href="(http:\/\/mailroom\.test\/t\/c\/[^"]+)"/)?.[1];
    expect(pixel && click).toBeTruthy();
    expect((await stack.http.get(apiPath(pixel!))).status).toBe(200);
    const opened = await messageOf(sender.hook, 'email.opened');
    await expectPayload(stack, sender.hook, opened.payload, { source: 'system', contact, email });
    const redirect = await stack.http.get(apiPath(click!.replace(/&amp;/g, '&')));
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('https://acme.example/read');
    const clicked = await messageOf(sender.hook, 'email.clicked');
    await expectPayload(stack, sender.hook, clicked.payload, { source: 'system', contact, email });
    expect(clicked.payload.data.event.data).toMatchObject({ url: 'https://acme.example/read' });

    // RFC 8058 one-click unsubscribe from the List-Unsubscribe header.
    const unsubscribe = mail.raw.replace(/\r?\n[ \t]+/g, ' ').match(/^List-Unsubscribe: <(http:\/\/mailroom\.test\/unsubscribe\/[^>]+)>/m)?.[1];
    expect(unsubscribe).toBeTruthy();
    const oneClick = await stack.http.request('POST', apiPath(unsubscribe!), {
      rawBody: 'List-Unsubscribe=One-Click',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(oneClick.status).toBe(200);
    const unsubscribed = await messageOf(sender.hook, 'contact.unsubscribed');
    await expectPayload(stack, sender.hook, unsubscribed.payload, { source: 'system', contact });
  });

  it("a campaign's email.sent names its campaign", async () => {
    const sender = await newSender();
    const to = recipient();
    const created = await stack.http.post('/contacts', { email: to, subscribed: true }, { key: sender.project.secretKey });
    expect(created.status).toBe(201);
    const campaign = await stack.http.post(
      '/campaigns',
      { name: 'November', subject: 'November news', body: '<p>Hello</p>', from: `news@${sender.domain}`, audienceType: 'ALL' },
      { key: sender.project.secretKey },
    );
    expect(campaign.status).toBe(201);
    const campaignId: string = campaign.body.data.id;
    expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, { key: sender.project.secretKey })).status).toBe(200);

    const sent = await messageOf(sender.hook, 'email.sent');
    const [row] = await stack.orm.em.fork().execute(`select id from emails where campaign_id = ?`, [campaignId]);
    await expectPayload(stack, sender.hook, sent.payload, {
      source: 'system',
      contact: { id: created.body.id, email: to },
      email: { id: row.id, subject: 'November news', campaignId },
    });
  });

  it('a permanent refusal by the relay: email.failed with the email and its contact', async () => {
    const sender = await newSender();
    const { emailId, contact } = await send(sender, { to: REFUSING, from: `hello@${sender.domain}`, subject: 'Refused', body: '<p>Hi</p>' });
    const failed = await messageOf(sender.hook, 'email.failed');
    await expectPayload(stack, sender.hook, failed.payload, { source: 'system', contact, email: { id: emailId, subject: 'Refused' } });
    expect(failed.payload.data.event.data).toMatchObject({ error: expect.stringMatching(/550|Mailbox unavailable/) });
  });
});

describe('mail in', () => {
  it('a message to a project address over SMTP: email.received with the sender as contact and the inbound record', async () => {
    const sender = await newSender();
    const mx = nodemailer.createTransport({ host: '127.0.0.1', port: stack.api.smtp.inbound!.port, secure: false, ignoreTLS: true, name: 'mx.sender.test' });
    try {
      const info = await mx.sendMail({ from: 'Alice <alice@sender.test>', to: `support@${sender.domain}`, subject: 'Re: my order', text: 'Where is it?' });
      expect(info.response).toMatch(/^250 /);
    } finally {
      mx.close();
    }
    const received = await messageOf(sender.hook, 'email.received', undefined, 60_000);
    const inbound = await eventually(async () => {
      const res = await stack.http.get('/emails?source=INBOUND', { key: sender.project.secretKey });
      expect(res.body.data).toHaveLength(1);
      return res.body.data[0];
    });
    await expectPayload(stack, sender.hook, received.payload, {
      source: 'system',
      contact: { id: inbound.contactId, email: 'alice@sender.test' },
      email: { id: inbound.id, subject: 'Re: my order' },
    });
  });
});

/** A plain transactional send, once the SMTP server has the mail and the endpoint its email.sent (so feedback follows the send). */
async function sendAndReceive(sender: Sender) {
  const to = recipient();
  const sent = await send(sender, { to, from: `billing@${sender.domain}`, subject: 'Your invoice', body: '<p>Hello</p>', subscribed: true });
  const mail = await mailTo(to);
  const email = { id: sent.emailId, subject: 'Your invoice' };
  const message = await messageOf(sender.hook, 'email.sent', (p) => p.data.email?.id === sent.emailId);
  await expectPayload(stack, sender.hook, message.payload, { source: 'system', contact: sent.contact, email });
  return { ...sent, to, mail, email };
}

/** An SES notice about `mail` (found by its Message-ID), posted as SNS does: signed (SignatureVersion 2), JSON as text/plain. */
function postSesNotice(mail: ReceivedMail, notice: Record<string, unknown>) {
  const message: Record<string, string> = {
    Type: 'Notification',
    MessageId: crypto.randomUUID(),
    TopicArn: 'arn:aws:sns:eu-west-1:123456789012:mailroom-ses',
    Message: JSON.stringify({
      mail: {
        timestamp: new Date().toISOString(),
        source: mail.envelopeFrom,
        destination: mail.envelopeTo,
        commonHeaders: { messageId: mail.parsed.messageId },
      },
      ...notice,
    }),
    Timestamp: new Date().toISOString(),
    SignatureVersion: '2',
    SigningCertURL: CERT_URL,
  };
  // AWS's string to sign for a Notification without Subject.
  const toSign = ['Message', 'MessageId', 'Timestamp', 'TopicArn', 'Type'].map((k) => `${k}\n${message[k]}\n`).join('');
  message.Signature = crypto.sign('sha256', Buffer.from(toSign), snsKey).toString('base64');
  return stack.http.request('POST', '/webhooks/sns', {
    rawBody: JSON.stringify(message),
    headers: { 'Content-Type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
  });
}

/** Hands `raw` to the inbound SMTP listener as a mail server would. */
async function deliverInbound(envelope: { from: string; to: string }, raw: string) {
  const mx = nodemailer.createTransport({ host: '127.0.0.1', port: stack.api.smtp.inbound!.port, secure: false, ignoreTLS: true, name: 'mx.example.net' });
  try {
    expect((await mx.sendMail({ envelope: { from: envelope.from, to: [envelope.to] }, raw })).response).toMatch(/^250 /);
  } finally {
    mx.close();
  }
}

const crlf = (lines: string[]) => lines.join('\r\n') + '\r\n';

/** A Postfix-style permanent bounce (RFC 3464) to the return path, quoting the message's headers. */
function bounceReport(mail: ReceivedMail) {
  const to = mail.envelopeTo[0];
  const headers = mail.raw.slice(0, mail.raw.search(/\r?\n\r?\n/));
  return crlf([
    'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)',
    `To: ${mail.envelopeFrom}`,
    'Subject: Undelivered Mail Returned to Sender',
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    `<${to}>: host mx.example.org said: 550 5.1.1 User unknown`,
    '',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.org',
    '',
    `Final-Recipient: rfc822; ${to}`,
    'Action: failed',
    'Status: 5.1.1',
    `Diagnostic-Code: smtp; 550 5.1.1 <${to}>: User unknown`,
    '',
    '--b1',
    'Content-Type: text/rfc822-headers',
    '',
    ...headers.split(/\r?\n/),
    '',
    '--b1--',
  ]);
}

/** An ARF abuse report (RFC 5965) carrying the whole message, as a feedback loop sends it. */
function complaintReport(mail: ReceivedMail, domain: string) {
  return crlf([
    'From: <staff@fbl.example.net>',
    `To: <fbl@${domain}>`,
    'Subject: FW: Your invoice',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="b2"',
    '',
    '--b2',
    'Content-Type: text/plain; charset="US-ASCII"',
    '',
    'This is an email abuse report.',
    '',
    '--b2',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: SomeGenerator/1.0',
    'Version: 1',
    `Original-Mail-From: <${mail.envelopeFrom}>`,
    `Reported-Domain: ${domain}`,
    '',
    '--b2',
    'Content-Type: message/rfc822',
    '',
    ...mail.raw.replace(/\r?\n$/, '').split(/\r?\n/),
    '',
    '--b2--',
  ]);
}

describe('feedback', () => {
  it('SES through SNS: email.delivered for one email, email.bounced for another', async () => {
    const sender = await newSender();
    const delivered = await sendAndReceive(sender);
    const bounced = await sendAndReceive(sender);

    const now = new Date().toISOString();
    const notice = await postSesNotice(delivered.mail, {
      notificationType: 'Delivery',
      delivery: { timestamp: now, recipients: [delivered.to], smtpResponse: '250 2.0.0 OK' },
    });
    expect(notice.body).toEqual({ received: true, result: 'applied' });
    const bounce = await postSesNotice(bounced.mail, {
      notificationType: 'Bounce',
      bounce: {
        bounceType: 'Permanent',
        bounceSubType: 'General',
        bouncedRecipients: [{ emailAddress: bounced.to, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' }],
        timestamp: now,
        feedbackId: crypto.randomUUID(),
      },
    });
    expect(bounce.body).toEqual({ received: true, result: 'applied' });

    const deliveredMessage = await messageOf(sender.hook, 'email.delivered');
    await expectPayload(stack, sender.hook, deliveredMessage.payload, { source: 'system', contact: delivered.contact, email: delivered.email });
    const bouncedMessage = await messageOf(sender.hook, 'email.bounced');
    await expectPayload(stack, sender.hook, bouncedMessage.payload, { source: 'system', contact: bounced.contact, email: bounced.email });
    expect(bouncedMessage.payload.data.event.data).toMatchObject({ bounceType: 'Permanent' });
  });

  it('by mail to the inbound listener: a DSN to the return path (email.bounced), an ARF report (email.complained)', async () => {
    const sender = await newSender();
    const bounced = await sendAndReceive(sender);
    const complained = await sendAndReceive(sender);
    // Sent with a return path the listener receives for (INBOUND_MX_HOST).
    expect(bounced.mail.envelopeFrom).toBe(`bounces+${bounced.emailId}@mr-bounces.${sender.domain}`);

    await deliverInbound({ from: '', to: bounced.mail.envelopeFrom }, bounceReport(bounced.mail));
    const bouncedMessage = await messageOf(sender.hook, 'email.bounced', undefined, 60_000);
    await expectPayload(stack, sender.hook, bouncedMessage.payload, { source: 'system', contact: bounced.contact, email: bounced.email });
    expect(bouncedMessage.payload.data.event.data).toMatchObject({ bounceType: 'Permanent', bounceSubType: '5.1.1' });

    await deliverInbound({ from: 'staff@fbl.example.net', to: `fbl@${sender.domain}` }, complaintReport(complained.mail, sender.domain));
    const complainedMessage = await messageOf(sender.hook, 'email.complained', undefined, 60_000);
    await expectPayload(stack, sender.hook, complainedMessage.payload, { source: 'system', contact: complained.contact, email: complained.email });
    expect(complainedMessage.payload.data.event.data).toMatchObject({ feedbackType: 'abuse' });
  });
});
