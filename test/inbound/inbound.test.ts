import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { projectWithVerifiedDomain, verifyDomain } from '../support/sendingProject';
import { accountWithProject, type TestAccount, type TestProject, setBillingLimits } from '../support/accounts';
import { eventually } from '../support/eventually';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';
import { SmtpDialog, converse } from './smtpDialog';
import { RETENTION_RULES } from '../../services/retention/retentionRules';

/**
 * Mail in (contract 20) over real SMTP: the API's inbound listener, nodemailer as the sending
 * server, SPF/DKIM/DMARC verdicts from the test DNS server, processing by the stack's worker.
 */
const MAX_BYTES = 64 * 1024;

let dns: TestDnsServer;
let stack: TestStack;
let port: number;
const received: RecordedEventsBatch[] = [];

/** A sender domain whose SPF allows 127.0.0.1, with a DKIM key and a DMARC record on the test DNS server. */
function senderDomain() {
  const domain = `sender-${crypto.randomBytes(4).toString('hex')}.test`;
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const selector = 'sel1';
  dns.setTxt(domain, ['v=spf1 ip4:127.0.0.1 -all']);
  dns.setTxt(`${selector}._domainkey.${domain}`, [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]);
  dns.setTxt(`_dmarc.${domain}`, ['v=DMARC1; p=reject']);
  return { domain, dkim: { domainName: domain, keySelector: selector, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() } };
}

function transport(dkim?: { domainName: string; keySelector: string; privateKey: string }) {
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'mx.sender.test', ...(dkim ? { dkim } : {}) });
}

async function inboundEmails(project: TestProject, count: number) {
  return eventually(async () => {
    const res = await stack.http.get('/emails?source=INBOUND', { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(count);
    return res.body.data as Array<Record<string, any>>;
  }, 60_000);
}

const setInboundCap = (account: TestAccount, project: TestProject, inbound: number | null) => setBillingLimits(stack.http, account, project, { inbound });

beforeAll(async () => {
  dns = await startTestDnsServer();
  stack = await startTestStack({ inboundSmtp: true, env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', INBOUND_MAX_BYTES: String(MAX_BYTES) } });
  port = stack.api.smtp.inbound!.port;
  stack.eventTriggers.subscribe(async (batch) => {
    if (batch.events.some((e) => e.name === 'email.received')) received.push(batch);
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await dns?.close();
});

describe('mail in', () => {
  it('gathers messages arriving one after another into a few processing workflows, and processes every one', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const sender = senderDomain();
    const mailer = transport();
    // One at a time, each after the previous 250: every reception round holds one message.
    const startedAt = Date.now();
    for (let i = 0; i < 12; i++) {
      const info = await mailer.sendMail({ from: `bob@${sender.domain}`, to: `inbox@${domain}`, subject: `One of twelve #${i}`, text: `Message ${i}` });
      expect(info.response).toMatch(/^250 /);
    }
    const sendingMs = Date.now() - startedAt;
    const emails = await inboundEmails(project, 12);
    const rows = await stack.orm.em
      .fork()
      .execute<Array<{ workflows: number }>>(
        `select count(distinct m.workflow_id)::int as workflows from inbound_messages m join emails e on e.inbound_message_id = m.id where e.id = any(?::uuid[])`,
        [`{${emails.map((e) => e.id).join(',')}}`],
      );
    // A workflow gathers a project's messages for 250 ms: at most one per 250 ms the sending
    // took, and one more for the window open when it began (a workflow per round would be 12).
    expect(rows[0].workflows).toBeGreaterThanOrEqual(1);
    expect(rows[0].workflows).toBeLessThanOrEqual(Math.ceil(sendingMs / 250) + 1);
  });

  it('GET /config reports the inbound listener', async () => {
    expect((await stack.http.get('/config')).body.inbound).toBe(true);
  });

  it('records an accepted message: contact (unsubscribed), INBOUND record with verdicts, email.received, activity', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const sender = senderDomain();
    const text = 'Thanks, that works.\n\nOn Mon, 23 Nov 2026 at 10:00, Support <support@x.test> wrote:\n> Did it work?\n';
    const info = await transport(sender.dkim).sendMail({
      from: `Alice <alice@${sender.domain}>`,
      to: `Support+t-42@${domain.toUpperCase()}`,
      subject: 'Re: your ticket',
      messageId: `<ticket-42@${sender.domain}>`,
      text,
      html: '<p onclick="steal()">Thanks</p><script>alert(1)</script><a href="javascript:alert(2)">x</a><a href="https://ok.test/">ok</a>',
      attachments: [{ filename: 'note.txt', content: 'attached bytes', contentType: 'text/plain' }],
    });
    expect(info.accepted).toHaveLength(1);
    expect(info.response).toMatch(/^250 /);

    const [email] = await inboundEmails(project, 1);
    expect(email).toMatchObject({
      source: 'INBOUND',
      status: 'RECEIVED',
      from: `alice@${sender.domain}`,
      to: `Support+t-42@${domain}`,
      subject: 'Re: your ticket',
      messageId: `ticket-42@${sender.domain}`,
      auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass' },
    });

    const contact = await stack.http.get(`/contacts/${email.contactId}`, { key: project.secretKey });
    expect(contact.body).toMatchObject({ email: `alice@${sender.domain}`, subscribed: false });

    const detail = await stack.http.get(`/emails/${email.id}`, { key: project.secretKey });
    expect(detail.status).toBe(200);
    expect(detail.body.text).toBe(text);
    expect(detail.body.html).toContain('Thanks');
    expect(detail.body.html).not.toMatch(/script|onclick|javascript:/i);
    expect(detail.body.html).toContain('https://ok.test/');
    expect(detail.body.headers).toEqual(expect.arrayContaining([{ name: 'Subject', value: 'Re: your ticket' }]));
    expect(detail.body.attachments).toEqual([{ index: 0, filename: 'note.txt', contentType: 'text/plain', size: 14 }]);
    const event = detail.body.events.find((e: { name: string }) => e.name === 'email.received');
    expect(event.data).toEqual({
      emailId: email.id,
      from: `alice@${sender.domain}`,
      to: `Support+t-42@${domain}`,
      subject: 'Re: your ticket',
      messageId: `ticket-42@${sender.domain}`,
      spf: 'pass',
      dkim: 'pass',
      dmarc: 'pass',
      attachments: 1,
      text,
      mailboxHash: 't-42',
      replyText: 'Thanks, that works.',
    });

    const attachment = await stack.http.get(`/emails/${email.id}/attachments/0`, { key: project.secretKey });
    expect(attachment.status).toBe(200);
    expect(attachment.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(attachment.text).toBe('attached bytes');
    expect((await stack.http.get(`/emails/${email.id}/attachments/1`, { key: project.secretKey })).status).toBe(404);
    expect((await stack.http.get(`/emails/${email.id}/attachments/x`, { key: project.secretKey })).status).toBe(404);

    const raw = await stack.http.get(`/emails/${email.id}/raw`, { key: project.secretKey });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^message\/rfc822/);
    expect(raw.text).toContain('Subject: Re: your ticket');
    expect(raw.text).toContain('DKIM-Signature');

    // The event went through the trigger point automations listen on.
    expect(received.some((b) => b.projectId === project.id && b.events.some((e) => e.name === 'email.received' && e.contactId === email.contactId))).toBe(true);

    const activity = await stack.http.get('/activity?types=email.received', { key: project.secretKey });
    expect(activity.body.data).toEqual([expect.objectContaining({ type: 'email.received', contactId: email.contactId })]);
  });

  it('serves an attachment whose content type is no plain type/subtype as application/octet-stream', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const sender = senderDomain();
    const raw = [
      `From: bob@${sender.domain}`,
      `To: help@${domain}`,
      'Subject: odd attachment',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'see attached',
      '--b1',
      'Content-Type: "text/html<script>"; name="x.bin"',
      'Content-Disposition: attachment; filename="x.bin"',
      '',
      'bytes',
      '--b1--',
      '',
    ].join('\r\n');
    await transport().sendMail({ envelope: { from: `bob@${sender.domain}`, to: [`help@${domain}`] }, raw });
    const [email] = await inboundEmails(project, 1);
    const detail = await stack.http.get(`/emails/${email.id}`, { key: project.secretKey });
    expect(detail.body.attachments).toEqual([expect.objectContaining({ index: 0, contentType: 'application/octet-stream' })]);
    const attachment = await stack.http.get(`/emails/${email.id}/attachments/0`, { key: project.secretKey });
    expect(attachment.status).toBe(200);
    expect(attachment.headers.get('content-type')).toBe('application/octet-stream');
  });

  it('keeps an existing contact as it is, and reports failed verdicts', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const sender = `bob@unsigned-${crypto.randomBytes(3).toString('hex')}.test`;
    const tracked = await stack.http.post('/events/track', { email: sender, event: 'signed-up', subscribed: true }, { key: project.secretKey });
    expect(tracked.status).toBe(200);
    dns.setTxt(sender.split('@')[1], ['v=spf1 ip4:192.0.2.1 -all']);
    await transport().sendMail({ from: sender, to: `hello@${domain}`, subject: 'Plain', text: 'Hi' });
    const [email] = await inboundEmails(project, 1);
    expect(email.auth).toEqual({ spf: 'fail', dkim: 'none', dmarc: 'none' });
    const contact = await stack.http.get(`/contacts/${email.contactId}`, { key: project.secretKey });
    expect(contact.body.subscribed).toBe(true);
  });

  it('refuses every address it does not receive for: no relaying', async () => {
    const { domain } = await projectWithVerifiedDomain(stack, dns);
    // Refused by us: 550 5.7.1, no relaying.
    const refused = ['someone@elsewhere.test', `x@${domain}.evil.test`, `x@evil-${domain}`, `x@sub.${domain}`, 'x@[127.0.0.1]', `@${domain}:x@evil.test`];
    for (const address of refused) {
      const answers = await converse(port, ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<${address}>`]);
      expect({ address, reply: answers[2].code, text: answers[2].text.slice(0, 5) }).toEqual({ address, reply: 550, text: '5.7.1' });
    }
    // Forms smtp-server cannot read (quoted local parts, a second `@`) it answers 501 itself, before our rules.
    for (const address of ['"x y"@' + domain, '"x@evil.test"@' + domain, `x@evil.test@${domain}`]) {
      const answers = await converse(port, ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<${address}>`]);
      expect({ address, reply: answers[2].code }).toEqual({ address, reply: 501 });
    }
    const ok = await converse(port, ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<x@${domain.toUpperCase()}>`]);
    expect(ok[2].code).toBe(250);
    // A source route is ignored, as RFC 5321 (4.1.2, appendix C) has servers do: what is left is
    // judged, so a route can never carry mail anywhere else.
    const routed = await converse(port, ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<@evil.test:x@${domain}>`]);
    expect(routed[2].code).toBe(250);
  });

  it('advertises SIZE, refuses AUTH, and answers 552 to a message past INBOUND_MAX_BYTES', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const { dialog } = await SmtpDialog.open(port);
    try {
      const ehlo = await dialog.say('EHLO client.test');
      expect(ehlo.text).toContain(`SIZE ${MAX_BYTES}`);
      expect(ehlo.text).not.toMatch(/AUTH/);
      expect((await dialog.say('MAIL FROM:<a@sender.test>')).code).toBe(250);
      expect((await dialog.say(`RCPT TO:<big@${domain}>`)).code).toBe(250);
      const body = 'x'.repeat(998) + '\r\n';
      const { final } = await dialog.data(`Subject: big\r\n\r\n${body.repeat(Math.ceil((MAX_BYTES * 2) / body.length))}`);
      expect(final!.code).toBe(552);
      // The session goes on: a message that fits is taken.
      expect((await dialog.say('MAIL FROM:<a@sender.test>')).code).toBe(250);
      expect((await dialog.say(`RCPT TO:<small@${domain}>`)).code).toBe(250);
      expect((await dialog.data('Subject: small\r\n\r\nfits')).final!.code).toBe(250);
    } finally {
      dialog.close();
    }
    const emails = await inboundEmails(project, 1);
    expect(emails[0].to).toBe(`small@${domain}`);
  });

  it('answers 452 past 50 recipients', async () => {
    const { domain } = await projectWithVerifiedDomain(stack, dns);
    const commands = ['EHLO client.test', 'MAIL FROM:<a@sender.test>'];
    for (let i = 0; i < 52; i++) commands.push(`RCPT TO:<r${i}@${domain}>`);
    const answers = await converse(port, commands);
    const rcpt = answers.slice(2).map((a) => a.code);
    expect(rcpt.slice(0, 50)).toEqual(new Array(50).fill(250));
    expect(rcpt.slice(50)).toEqual([452, 452]);
  });

  it('answers 452 4.2.2 for a project at its inbound cap, counting nothing', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setInboundCap(account, project, 1);
    await transport().sendMail({ from: 'a@sender.test', to: `first@${domain}`, subject: 'One', text: '1' });
    await inboundEmails(project, 1);
    const limits = await stack.http.get(`/users/@me/projects/${project.id}/billing-limits`, { cookie: account.cookie });
    expect(limits.body.inbound).toMatchObject({ limit: 1, usage: 1 });
    // Reported reached, so refused at once (two processes: test/inbound/inboundCapProcesses.test.ts).
    const answers = await converse(port, ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<second@${domain}>`]);
    expect(answers[2].code).toBe(452);
    expect(answers[2].text).toMatch(/^4\.2\.2/);
    const after = await stack.http.get(`/users/@me/projects/${project.id}/billing-limits`, { cookie: account.cookie });
    expect(after.body.inbound.usage).toBe(1);
  });

  it('records an Auto-Submitted message without email.received', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await transport().sendMail({
      from: 'robot@sender.test',
      to: `hello@${domain}`,
      subject: 'Out of office',
      text: 'Away',
      headers: { 'Auto-Submitted': 'auto-replied' },
    });
    const [email] = await inboundEmails(project, 1);
    // The record and its event are written in one transaction: the record present, the event is settled.
    const detail = await stack.http.get(`/emails/${email.id}`, { key: project.secretKey });
    expect(detail.body.events).toEqual([]);
    expect(email.contactId).toBeTruthy();
  });

  it('stores and records a malformed MIME message with what could be parsed', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const broken = [
      'From: "Broken <broken@sender.test>',
      'Subject: =?utf-8?B?not base64!?=',
      'Content-Type: multipart/mixed; boundary="never-closed"',
      'Content-Transfer-Encoding: base64',
      '',
      '--never-closed',
      'Content-Type: text/plain; charset=unknown-charset',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'half a part =XY =',
      '--other',
      '\u0000\u0001 garbage',
    ].join('\r\n');
    const answers = await (async () => {
      const { dialog } = await SmtpDialog.open(port);
      try {
        await dialog.say('EHLO client.test');
        await dialog.say('MAIL FROM:<>');
        await dialog.say(`RCPT TO:<hello@${domain}>`);
        return await dialog.data(broken);
      } finally {
        dialog.close();
      }
    })();
    expect(answers.final!.code).toBe(250);
    const [email] = await inboundEmails(project, 1);
    expect(email.status).toBe('RECEIVED');
    const detail = await stack.http.get(`/emails/${email.id}`, { key: project.secretKey });
    expect(detail.status).toBe(200);
    const raw = await stack.http.get(`/emails/${email.id}/raw`, { key: project.secretKey });
    expect(raw.text).toContain('half a part');
  });

  it('gives each project verifying the domain its own copy', async () => {
    const { project: first, domain } = await projectWithVerifiedDomain(stack, dns);
    const { project: second } = await accountWithProject(stack.http);
    await verifyDomain(stack, dns, second, domain);
    await transport().sendMail({ from: 'shared@sender.test', to: `team@${domain}`, subject: 'Both', text: 'Hello both' });
    const [a] = await inboundEmails(first, 1);
    const [b] = await inboundEmails(second, 1);
    expect(a.id).not.toBe(b.id);
    expect(a.contactId).not.toBe(b.contactId);
    expect((await stack.http.get(`/emails/${a.id}`, { key: second.secretKey })).status).toBe(404);
  });

  it('keeps a received message INBOUND_RETENTION_DAYS, then the record stays without its content', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await transport().sendMail({
      from: 'old@sender.test',
      to: `hello@${domain}`,
      subject: 'Old',
      text: 'Old text',
      attachments: [{ filename: 'a.txt', content: 'x' }],
    });
    const [email] = await inboundEmails(project, 1);
    const em = stack.orm.em.fork();
    const pass = { em, settings: stack.config.retention, hasTime: () => true };
    expect(stack.config.retention.inboundDays).toBe(30);
    await RETENTION_RULES.inboundContent(pass);
    expect((await stack.http.get(`/emails/${email.id}`, { key: project.secretKey })).body.text).toBe('Old text');

    await em.execute(`update inbound_messages m set received_at = now() - interval '31 days' from emails e where e.id = ? and m.id = e.inbound_message_id`, [
      email.id,
    ]);
    expect(await RETENTION_RULES.inboundContent(pass)).toBeGreaterThanOrEqual(1);
    const detail = await stack.http.get(`/emails/${email.id}`, { key: project.secretKey });
    expect(detail.body).toMatchObject({ id: email.id, subject: 'Old', status: 'RECEIVED', text: null, html: null, headers: [], attachments: [] });
    expect((await stack.http.get(`/emails/${email.id}/raw`, { key: project.secretKey })).status).toBe(404);
    expect((await stack.http.get(`/emails/${email.id}/attachments/0`, { key: project.secretKey })).status).toBe(404);
  });
});
