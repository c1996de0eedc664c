import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../support/smtpServer';
import type { TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { contactSubscribed, emailRow, eventsOf, suppressions } from '../support/emailFixtures';
import { dkimResults, projectWithVerifiedDomain } from '../support/sendingProject';
import { applyDeliveryReport, type DeliveryReportServices } from '../../services/inbound/deliveryReports';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';

/**
 * Bounces and complaints by mail (contract 20) against real emails: each one is sent through the
 * stack with INBOUND_MX_HOST set, so its row, its Message-ID and its return path are the ones
 * delivery wrote. The reports are written by hand as Postfix, Exim and Gmail write DSNs (RFC
 * 3464) and as mailbox providers write ARF reports (RFC 5965).
 */
const MX_HOST = 'mx.mailroom.test';

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
let services: DeliveryReportServices;
const triggered: RecordedEventsBatch[] = [];

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({
    inboundSmtp: true,
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, INBOUND_MX_HOST: MX_HOST },
  });
  stack.eventTriggers.subscribe(async (batch) => void triggered.push(batch));
  services = { eventTriggers: stack.eventTriggers, returnPathSubdomain: stack.config.smtpListeners.returnPathSubdomain, logger: stack.logger };
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

interface SentEmail {
  project: TestProject;
  domain: string;
  emailId: string;
  contactId: string;
  to: string;
  messageId: string;
  mail: ReceivedMail;
}

/** Sends one email to a subscribed contact through /v1/send and waits until it is SENT. */
async function sendOne(sender?: { project: TestProject; domain: string }): Promise<SentEmail> {
  const { project, domain } = sender ?? (await projectWithVerifiedDomain(stack, dns));
  const to = `reader-${crypto.randomBytes(4).toString('hex')}@example.org`;
  const res = await stack.http.post(
    '/v1/send',
    { to, from: `billing@${domain}`, subject: 'Your invoice', body: '<p>Hello</p>', subscribed: true },
    { key: project.secretKey },
  );
  expect(res.status).toBe(200);
  const emailId: string = res.body.data.emails[0].email;
  const contactId: string = res.body.data.emails[0].contact.id;
  const mail = await smtp.waitFor((m) => m.envelopeTo.includes(to));
  const row = await eventually(async () => {
    const r = await emailRow(stack, emailId);
    if (r.status !== 'SENT') throw new Error(`still ${r.status}`);
    return r;
  });
  return { project, domain, emailId, contactId, to, messageId: row.message_id, mail };
}

const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n') + '\r\n');
const headerBlock = (raw: string) => raw.slice(0, raw.search(/\r?\n\r?\n/)).split(/\r?\n/);

/** A Postfix bounce: the human part, the delivery status, the returned message's headers. */
function postfixBounce(sent: SentEmail, options: { status?: string; action?: string; to?: string } = {}) {
  const boundary = '8F2C01234.1764043200/mx.example.org';
  return crlf([
    'Received: by mx.example.org (Postfix) id 8F2C01234; Wed, 25 Nov 2026 04:00:00 +0000 (UTC)',
    'Date: Wed, 25 Nov 2026 04:00:00 +0000 (UTC)',
    'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)',
    'Subject: Undelivered Mail Returned to Sender',
    `To: ${options.to ?? sent.mail.envelopeFrom}`,
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status;',
    `\tboundary="${boundary}"`,
    'Content-Transfer-Encoding: 7bit',
    `Message-Id: <20261125040000.8F2C01234@mx.example.org>`,
    '',
    'This is a MIME-encapsulated message.',
    '',
    `--${boundary}`,
    'Content-Description: Notification',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'This is the mail system at host mx.example.org.',
    '',
    "I'm sorry to have to inform you that your message could not",
    "be delivered to one or more recipients. It's attached below.",
    '',
    `<${sent.to}>: host mx.example.org[192.0.2.25] said: 550 5.1.1 <${sent.to}>:`,
    '    Recipient address rejected: User unknown in local recipient table',
    '',
    `--${boundary}`,
    'Content-Description: Delivery report',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.org',
    'X-Postfix-Queue-ID: 8F2C01234',
    `X-Postfix-Sender: rfc822; ${sent.mail.envelopeFrom}`,
    'Arrival-Date: Wed, 25 Nov 2026 03:59:58 +0000 (UTC)',
    '',
    `Final-Recipient: rfc822; ${sent.to}`,
    `Original-Recipient: rfc822;${sent.to}`,
    `Action: ${options.action ?? 'failed'}`,
    `Status: ${options.status ?? '5.1.1'}`,
    'Remote-MTA: dns; mx.example.org',
    `Diagnostic-Code: smtp; 550 5.1.1 <${sent.to}>: Recipient address rejected: User`,
    '    unknown in local recipient table',
    '',
    `--${boundary}`,
    'Content-Description: Undelivered Message Headers',
    'Content-Type: text/rfc822-headers',
    'Content-Transfer-Encoding: 7bit',
    '',
    ...headerBlock(sent.mail.raw),
    '',
    `--${boundary}--`,
  ]);
}

/** An Exim delay warning (4.x.x) carrying the whole returned message. */
function eximDelay(sent: SentEmail, returned: string = sent.mail.raw) {
  const boundary = '1764043200-eximdsn-1804289383';
  return crlf([
    'From: Mail Delivery System <Mailer-Daemon@relay.example.net>',
    `To: billing@${sent.domain}`,
    'Subject: Warning: message 1uQ2xY-000Abc-7Z delayed 24 hours',
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary=${boundary}`,
    'Message-Id: <E1uQ3aB-000Def-2K@relay.example.net>',
    '',
    `--${boundary}`,
    'Content-type: text/plain; charset=us-ascii',
    '',
    'This message was created automatically by mail delivery software.',
    'A message that you sent has not yet been delivered to one or more of its',
    'recipients after more than 24 hours on the queue on relay.example.net.',
    '',
    `  ${sent.to}`,
    '    Delay reason: SMTP error from remote mail server after RCPT TO:',
    '    452 4.2.2 Mailbox full',
    '',
    'No action is required on your part. Delivery attempts will continue for',
    'some time, and this warning may be repeated at intervals if the message',
    'remains undelivered. Eventually the mail delivery software will give up,',
    'and when that happens, the message will be returned to you.',
    '',
    `--${boundary}`,
    'Content-type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.example.net',
    '',
    `Action: delayed`,
    `Final-Recipient: rfc822;${sent.to}`,
    'Status: 4.2.2',
    'Remote-MTA: dns; mx.example.org',
    'Diagnostic-Code: smtp; 452 4.2.2 Mailbox full',
    'Will-Retry-Until: Fri, 27 Nov 2026 04:00:00 +0000',
    '',
    `--${boundary}`,
    'Content-type: message/rfc822',
    '',
    ...returned.replace(/\r?\n$/, '').split(/\r?\n/),
    '',
    `--${boundary}--`,
  ]);
}

/** A Gmail bounce that quotes nothing: only its envelope recipient (the return path) names the email. */
function gmailBounceWithoutQuote(sent: SentEmail, recipient = sent.mail.envelopeFrom) {
  const boundary = '000000000000a1b2c3d4e5f60718';
  return crlf([
    'From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>',
    `To: ${recipient}`,
    'Auto-Submitted: auto-replied',
    'Subject: Delivery Status Notification (Failure)',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; boundary="${boundary}"; report-type=delivery-status`,
    'Message-ID: <6744a3c0.050a0220.1b2c.0001.GMR@mx.google.com>',
    '',
    `--${boundary}`,
    'Content-Type: multipart/related; boundary="000000000000a1b2c3d4e5f60719"',
    '',
    '--000000000000a1b2c3d4e5f60719',
    'Content-Type: text/plain; charset="UTF-8"',
    '',
    `Address not found: Your message wasn't delivered to ${sent.to} because the address couldn't be found.`,
    '',
    '--000000000000a1b2c3d4e5f60719--',
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; googlemail.com',
    'Received-From-MTA: dns; relay.example.net',
    'Arrival-Date: Wed, 25 Nov 2026 03:59:58 -0800 (PST)',
    '',
    `Final-Recipient: rfc822; ${sent.to}`,
    'Action: failed',
    'Status: 5.1.1',
    'Remote-MTA: dns; gmail-smtp-in.l.google.com. (2a00:1450:400c:c0b::1b, the server for the domain example.org.)',
    'Diagnostic-Code: smtp; 550-5.1.1 The email account that you tried to reach does not exist. 550 5.1.1 https://support.google.com/mail/?p=NoSuchUser',
    'Last-Attempt-Date: Wed, 25 Nov 2026 04:00:00 -0800 (PST)',
    '',
    `--${boundary}--`,
  ]);
}

/** An ARF abuse report (RFC 5965 section 5's example, as a feedback loop sends it), with the whole message. */
function abuseReport(sent: SentEmail, feedbackType = 'abuse') {
  const boundary = 'part1_13d.2e68ed54_boundary';
  return crlf([
    'From: <staff@fbl.example.net>',
    'Date: Wed, 25 Nov 2026 04:10:00 +0000',
    'Subject: FW: Your invoice',
    `To: <fbl@${sent.domain}>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset="US-ASCII"',
    'Content-Transfer-Encoding: 7bit',
    '',
    'This is an email abuse report for an email message received from IP',
    '192.0.2.1 on Wed, 25 Nov 2026 04:00:00 +0000.',
    '',
    `--${boundary}`,
    'Content-Type: message/feedback-report',
    '',
    `Feedback-Type: ${feedbackType}`,
    'User-Agent: SomeGenerator/1.0',
    'Version: 1',
    `Original-Mail-From: <${sent.mail.envelopeFrom}>`,
    'Original-Rcpt-To: <redacted@example.org>',
    'Arrival-Date: Wed, 25 Nov 2026 04:00:00 +0000',
    `Reported-Domain: ${sent.domain}`,
    'Source-IP: 192.0.2.1',
    '',
    `--${boundary}`,
    'Content-Type: message/rfc822',
    'Content-Disposition: inline',
    '',
    ...sent.mail.raw.replace(/\r?\n$/, '').split(/\r?\n/),
    '',
    `--${boundary}--`,
  ]);
}

const apply = (projectId: string, raw: Buffer, recipients: string[]) => applyDeliveryReport(services, stack.orm.em.fork(), { projectId, raw, recipients });

async function expectUntouched(sent: SentEmail) {
  const row = await emailRow(stack, sent.emailId);
  expect(row).toMatchObject({ status: 'SENT', error: null, bounced_at: null, complained_at: null });
  expect((await eventsOf(stack, { emailId: sent.emailId })).map((e) => e.name)).toEqual(['email.sent']);
  expect(await suppressions(stack, sent.project.id)).toEqual([]);
  expect(await contactSubscribed(stack, sent.contactId)).toBe(true);
}

describe('the return path (INBOUND_MX_HOST set)', () => {
  it('sends with MAIL FROM bounces+<emailId>@<RETURN_PATH_SUBDOMAIN>.<domain>, the From header unchanged and DKIM passing', async () => {
    const sent = await sendOne();
    expect(sent.mail.envelopeFrom).toBe(`bounces+${sent.emailId}@mr-bounces.${sent.domain}`);
    expect(sent.mail.parsed.from?.value).toEqual([{ name: '', address: `billing@${sent.domain}` }]);
    expect(sent.mail.parsed.headers.has('return-path')).toBe(false);
    expect(await dkimResults(stack, sent.mail.raw)).toEqual([
      expect.objectContaining({ signingDomain: sent.domain, status: expect.objectContaining({ result: 'pass' }) }),
    ]);
  });

  it('lists the INBOUND MX and the RETURN_PATH MX and SPF records, which never decide verification', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const [listed] = (await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey })).body.filter((d: any) => d.domain === domain);
    // Verified with the DKIM record alone: none of the mail-in records is published.
    expect(listed.status).toBe('VERIFIED');
    const checked = await stack.http.get(`/domains/${listed.id}/verify`, { key: project.secretKey });
    expect(checked.body.status).toBe('VERIFIED');
    for (const answer of [listed, checked.body]) {
      expect(answer.records.map((r: any) => [r.purpose, r.type, r.name, r.value, r.verified])).toEqual([
        [
          'DKIM',
          'TXT',
          expect.stringMatching(new RegExp(`\\._domainkey\\.${domain.replace(/\./g, '\\.')}$`)),
          expect.stringMatching(/^v=DKIM1; k=rsa; p=/),
          true,
        ],
        ['SPF', 'TXT', domain, 'v=spf1 a mx ~all', false],
        ['DMARC', 'TXT', `_dmarc.${domain}`, 'v=DMARC1; p=none;', false],
        ['INBOUND', 'MX', domain, `10 ${MX_HOST}`, false],
        ['RETURN_PATH', 'MX', `mr-bounces.${domain}`, `10 ${MX_HOST}`, false],
        ['RETURN_PATH', 'TXT', `mr-bounces.${domain}`, 'v=spf1 a mx ~all', false],
      ]);
    }
    const created = await stack.http.post('/domains', { domain: `new.${domain}` }, { key: project.secretKey });
    expect(created.status).toBe(201);
    expect(created.body.records.filter((r: any) => ['INBOUND', 'RETURN_PATH'].includes(r.purpose))).toHaveLength(3);
  });
});

describe('reports over SMTP (the inbound listener)', () => {
  it('a bounce delivered to the return path is applied to its email and recorded as no message', async () => {
    const sent = await sendOne();
    const returnPath = sent.mail.envelopeFrom;
    expect(returnPath).toMatch(new RegExp(`^bounces\\+${sent.emailId}@`, 'i'));
    const mx = nodemailer.createTransport({ host: '127.0.0.1', port: stack.api.smtp.inbound!.port, secure: false, ignoreTLS: true });
    try {
      const info = await mx.sendMail({ envelope: { from: '', to: [returnPath] }, raw: postfixBounce(sent) });
      expect(info.response).toMatch(/^250 /);
    } finally {
      mx.close();
    }
    const row = await eventually(async () => {
      const r = await emailRow(stack, sent.emailId);
      if (r.status !== 'BOUNCED') throw new Error(`still ${r.status}`);
      return r;
    });
    expect(row.bounced_at).not.toBeNull();
    expect(await suppressions(stack, sent.project.id)).toContainEqual(expect.objectContaining({ email: sent.to }));
    // The stored message was processed (so the absence below is certain), and it made no INBOUND record.
    await eventually(async () => {
      const [m] = await stack.orm.em.fork().execute(`select count(*)::int as n from inbound_messages where status = 'RECEIVED'`);
      if (m.n !== 0) throw new Error(`${m.n} inbound messages not processed yet`);
    });
    const inbound = await stack.orm.em.fork().execute(`select count(*)::int as n from emails where project_id = ? and source = 'INBOUND'`, [sent.project.id]);
    expect(inbound[0].n).toBe(0);
  });
});

describe('applyDeliveryReport', () => {
  it('a Postfix permanent bounce (headers part): BOUNCED, suppressed, unsubscribed, email.bounced; a replay changes nothing more', async () => {
    const sent = await sendOne();
    const before = triggered.length;
    expect(await apply(sent.project.id, postfixBounce(sent), [sent.mail.envelopeFrom])).toBe(true);

    const row = await emailRow(stack, sent.emailId);
    expect(row.status).toBe('BOUNCED');
    expect(row.bounced_at).not.toBeNull();
    expect(row.error).toMatch(/^Bounced \(Permanent\/5\.1\.1\): 550 5\.1\.1 <[^>]+>: Recipient address rejected: User unknown in local recipient table$/);
    expect(await suppressions(stack, sent.project.id)).toEqual([
      { email: sent.to, reason: 'BOUNCE', email_id: sent.emailId, detail: expect.stringContaining('550 5.1.1') },
    ]);
    expect(await contactSubscribed(stack, sent.contactId)).toBe(false);
    const events = await eventsOf(stack, { emailId: sent.emailId });
    expect(events.map((e) => e.name)).toEqual(['email.sent', 'email.bounced']);
    expect(events[1].data).toMatchObject({ emailId: sent.emailId, bounceType: 'Permanent', bounceSubType: '5.1.1' });
    expect((await eventsOf(stack, { contactId: sent.contactId })).map((e) => e.name)).toContain('contact.unsubscribed');
    // The committed events reached the triggers (automations, webhooks) as SES's do.
    expect(triggered.slice(before).flatMap((b) => b.events.map((e) => e.name))).toEqual(expect.arrayContaining(['email.bounced', 'contact.unsubscribed']));

    expect(await apply(sent.project.id, postfixBounce(sent), [sent.mail.envelopeFrom])).toBe(true);
    expect((await eventsOf(stack, { emailId: sent.emailId })).map((e) => e.name)).toEqual(['email.sent', 'email.bounced']);
  });

  it('an Exim delay warning (4.x.x, whole message returned, matched by Message-ID): noted on error only', async () => {
    const sent = await sendOne();
    // Sent to the From address: no return path names the email, its Message-ID does.
    expect(await apply(sent.project.id, eximDelay(sent), [`billing@${sent.domain}`])).toBe(true);
    const row = await emailRow(stack, sent.emailId);
    expect(row).toMatchObject({ status: 'SENT', bounced_at: null, error: 'Soft bounce (Transient/4.2.2): 452 4.2.2 Mailbox full' });
    expect(await suppressions(stack, sent.project.id)).toEqual([]);
    expect(await contactSubscribed(stack, sent.contactId)).toBe(true);
    expect((await eventsOf(stack, { emailId: sent.emailId })).map((e) => e.name)).toEqual(['email.sent']);
  });

  it('a Gmail bounce quoting nothing is attributed by its return-path recipient', async () => {
    const sent = await sendOne();
    expect(await apply(sent.project.id, gmailBounceWithoutQuote(sent), [sent.mail.envelopeFrom.toUpperCase()])).toBe(true);
    expect((await emailRow(stack, sent.emailId)).status).toBe('BOUNCED');
    expect(await suppressions(stack, sent.project.id)).toEqual([expect.objectContaining({ email: sent.to, reason: 'BOUNCE', email_id: sent.emailId })]);
    expect(await contactSubscribed(stack, sent.contactId)).toBe(false);
  });

  it('an ARF abuse report: COMPLAINED, suppressed as COMPLAINT, unsubscribed, email.complained (a redacted Original-Rcpt-To)', async () => {
    const sent = await sendOne();
    expect(await apply(sent.project.id, abuseReport(sent), [`fbl@${sent.domain}`])).toBe(true);
    const row = await emailRow(stack, sent.emailId);
    expect(row.status).toBe('COMPLAINED');
    expect(row.complained_at).not.toBeNull();
    expect(await suppressions(stack, sent.project.id)).toEqual([{ email: sent.to, reason: 'COMPLAINT', email_id: sent.emailId, detail: 'abuse' }]);
    expect(await contactSubscribed(stack, sent.contactId)).toBe(false);
    const events = await eventsOf(stack, { emailId: sent.emailId });
    expect(events.map((e) => e.name)).toEqual(['email.sent', 'email.complained']);
    expect(events[1].data).toMatchObject({ feedbackType: 'abuse' });
  });

  it('a "not-spam" feedback report is feedback that changes nothing', async () => {
    const sent = await sendOne();
    expect(await apply(sent.project.id, abuseReport(sent, 'not-spam'), [`fbl@${sent.domain}`])).toBe(true);
    await expectUntouched(sent);
  });

  it("a report naming another project's email changes nothing there and is not this project's feedback", async () => {
    const sent = await sendOne();
    const other = await projectWithVerifiedDomain(stack, dns);
    expect(await apply(other.project.id, postfixBounce(sent, { to: `postmaster@${other.domain}` }), [`postmaster@${other.domain}`])).toBe(false);
    expect(await apply(other.project.id, gmailBounceWithoutQuote(sent), [sent.mail.envelopeFrom])).toBe(false);
    expect(await apply(other.project.id, abuseReport(sent), [`fbl@${other.domain}`])).toBe(false);
    await expectUntouched(sent);
    expect(await suppressions(stack, other.project.id)).toEqual([]);
  });

  it('a DSN about a DSN, a return path naming no email, and mail that is no report are left to be recorded as messages', async () => {
    const sent = await sendOne();
    // The returned message is itself a bounce (ours bounced back to a bouncing system).
    const bounceOfBounce = eximDelay(sent, postfixBounce(sent).toString('utf8'));
    expect(await apply(sent.project.id, bounceOfBounce, [`billing@${sent.domain}`])).toBe(false);
    const unknownId = `bounces+${crypto.randomUUID()}@mr-bounces.${sent.domain}`;
    expect(await apply(sent.project.id, gmailBounceWithoutQuote(sent, unknownId), [unknownId])).toBe(false);
    // A report quoting nothing, sent to an ordinary address: it names no email.
    expect(await apply(sent.project.id, gmailBounceWithoutQuote(sent, `billing@${sent.domain}`), [`billing@${sent.domain}`])).toBe(false);
    // An ordinary message, and a read receipt (multipart/report of another type).
    expect(await apply(sent.project.id, Buffer.from(sent.mail.raw), [`billing@${sent.domain}`])).toBe(false);
    const receipt = postfixBounce(sent).toString('utf8').replace('report-type=delivery-status', 'report-type=disposition-notification');
    expect(await apply(sent.project.id, Buffer.from(receipt), [sent.mail.envelopeFrom])).toBe(false);
    await expectUntouched(sent);
  });
});
