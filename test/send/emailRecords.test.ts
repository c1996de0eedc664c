import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer, type ReceivedMail } from '../support/smtpServer';
import { accountWithProject, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { dkimResults, projectWithVerifiedDomain } from '../support/sendingProject';

/** Email records (contract 20): GET /emails, /emails/:id and /emails/:id/raw over real delivery. */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer({ rejectRecipients: ['nobody@example.org'], rejectDataTo: ['spamtrap@example.org'] });
  stack = await startTestStack({
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' },
  });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);
const get = (project: TestProject, path: string) => stack.http.get(path, { key: project.secretKey });
const mailTo = (address: string) => smtp.waitFor((m) => m.envelopeTo.includes(address));

async function statusOf(project: TestProject, emailId: string, wanted: string[]) {
  return eventually(async () => {
    const res = await get(project, `/emails/${emailId}`);
    if (!wanted.includes(res.body.status)) throw new Error(`status ${res.body.status}`);
    return res.body;
  });
}

/**
 * GET raw is the message the sink received, byte for byte. smtp-server hands onData the message
 * with dot-stuffing undone and adds no header, so its bytes are the message as handed over.
 */
async function expectRawIsReceived(project: TestProject, emailId: string, mail: ReceivedMail) {
  const raw = await get(project, `/emails/${emailId}/raw`);
  expect(raw.status).toBe(200);
  expect(raw.headers.get('content-type')).toBe('message/rfc822');
  expect(raw.text.length).toBe(mail.raw.length);
  expect(raw.text).toBe(mail.raw);
  return raw.text;
}

describe('GET /emails/:id/raw', () => {
  it('a /v1/send email with attachments: exactly the bytes the relay received, DKIM signature included', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const pdf = crypto.randomBytes(3000);
    const res = await stack.http.post(
      '/v1/send',
      {
        to: { name: 'Ada Lovelace', email: 'ada@example.org' },
        from: { name: 'Acme Billing', email: `billing@${domain}` },
        subject: 'Invoice {{n}} — ünïcode',
        // A line starting with a dot: SMTP carries it dot-stuffed, the sink undoes that.
        body: '<p>Hello {{n}}. <a href="https://acme.example/pay">Pay</a></p>\n.a line with a leading dot\n<img src="cid:logo">',
        data: { n: 'INV-9' },
        headers: { 'X-Zeta': 'last', 'X-A': 'first', 'X-Campaign-Ref': 'spring' },
        attachments: [
          { filename: 'invoice.pdf', content: pdf.toString('base64'), contentType: 'application/pdf' },
          {
            filename: 'logo.png',
            content: Buffer.from('89504e47', 'hex').toString('base64'),
            contentType: 'image/png',
            contentId: 'logo',
            disposition: 'inline',
          },
        ],
      },
      { key: project.secretKey },
    );
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].email;
    const mail = await mailTo('ada@example.org');
    await statusOf(project, emailId, ['SENT']);

    const raw = await expectRawIsReceived(project, emailId, mail);
    expect(raw).toContain(`Message-ID: <${emailId}@${domain}>`);
    expect(raw).toMatch(/\r\n\.a line with a leading dot\r\n/);
    expect(raw).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256;/);
    expect(await dkimResults(stack, Buffer.from(raw))).toEqual([expect.objectContaining({ status: expect.objectContaining({ result: 'pass' }) })]);
    // Asked again, the same bytes (nothing random is redrawn).
    expect((await get(project, `/emails/${emailId}/raw`)).text).toBe(raw);
    // The stamp is what was stored in place of the message: a few hundred bytes.
    const [row] = await sql(`select octet_length(message_stamp::text) as size from emails where id = ?`, [emailId]);
    expect(row.size).toBeLessThan(1000);
  });

  it('campaign emails: each one exactly as the relay received it', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const addresses = Array.from({ length: 12 }, (_, i) => `camp-${i}-${crypto.randomBytes(3).toString('hex')}@example.org`);
    await sql(
      `insert into contacts (project_id, email, subscribed, data)
       select ?, e, true, jsonb_build_object('firstName', 'Reader ' || e) from jsonb_array_elements_text(?::jsonb) as e`,
      [project.id, JSON.stringify(addresses)],
    );
    const created = await stack.http.post(
      '/campaigns',
      {
        name: 'News',
        subject: 'News for {{firstName}}',
        body: '<p>Hi {{firstName}} <a href="https://example.com/r">read</a></p>',
        from: `news@${domain}`,
        audienceType: 'ALL',
      },
      { key: project.secretKey },
    );
    expect(created.status).toBe(201);
    const campaignId = created.body.data.id;
    expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey })).status).toBe(200);

    const emails = await eventually(async () => {
      const page = await get(project, `/emails?campaignId=${campaignId}&limit=100`);
      const sent = page.body.data.filter((e: { status: string }) => e.status === 'SENT');
      if (sent.length < addresses.length) throw new Error(`${sent.length} sent`);
      return page.body.data as Array<{ id: string; to: string; source: string; campaignId: string }>;
    }, 60_000);
    expect(emails.every((e) => e.source === 'CAMPAIGN' && e.campaignId === campaignId)).toBe(true);
    for (const email of emails) {
      const mail = await mailTo(email.to);
      const raw = await expectRawIsReceived(project, email.id, mail);
      expect(raw).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click');
    }
  });

  it('404 while no message exists (suppressed, refused at RCPT) and for an unknown id, a non-uuid or another project’s email', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await sql(`insert into email_suppressions (project_id, email, reason) values (?, 'gone@example.org', 'BOUNCE')`, [project.id]);
    const res = await stack.http.post(
      '/v1/send',
      { to: ['gone@example.org', 'nobody@example.org'], from: `hi@${domain}`, subject: 'Hi', body: '<p>Hi</p>' },
      { key: project.secretKey },
    );
    expect(res.status).toBe(200);
    const [suppressed, refused] = res.body.data.emails.map((e: { email: string }) => e.email);
    await statusOf(project, suppressed, ['SUPPRESSED']);
    await statusOf(project, refused, ['FAILED']);
    for (const id of [suppressed, refused]) {
      const raw = await get(project, `/emails/${id}/raw`);
      expect(raw.status).toBe(404);
      expect(raw.body.error).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
    }

    const { project: other } = await accountWithProject(stack.http);
    for (const path of [
      `/emails/${suppressed}`,
      `/emails/${suppressed}/raw`,
      `/emails/${crypto.randomUUID()}`,
      '/emails/not-a-uuid',
      '/emails/not-a-uuid/raw',
    ]) {
      const answer = await get(other, path);
      expect(answer.status).toBe(404);
      expect(answer.body.error).toMatchObject({ code: 'EMAIL_NOT_FOUND', details: { resource: 'email' } });
    }
    expect((await stack.http.get(`/emails/${suppressed}`)).status).toBe(401);
  });

  it('a message the relay took whole and refused at the end of its data (FAILED): shown as the relay received it', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const res = await stack.http.post(
      '/v1/send',
      { to: 'spamtrap@example.org', from: `hi@${domain}`, subject: 'Refused', body: '<p>Refused</p>' },
      { key: project.secretKey },
    );
    const emailId = res.body.data.emails[0].email;
    const record = await statusOf(project, emailId, ['FAILED']);
    expect(record.error).toMatch(/550/);
    const refused = smtp.refused.find((m) => m.raw.includes(`<${emailId}@${domain}>`))!;
    await expectRawIsReceived(project, emailId, refused);
  });
});

describe('GET /emails/:id', () => {
  it('the email record of contract 9 plus its own events, oldest first', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const res = await stack.http.post(
      '/v1/send',
      { to: 'opener@example.org', from: `hi@${domain}`, subject: 'Open me', body: '<p>Hi</p>' },
      { key: project.secretKey },
    );
    const emailId = res.body.data.emails[0].email;
    const mail = await mailTo('opener@example.org');
    await statusOf(project, emailId, ['SENT']);
    const pixel = /http:\/\/mailroom\.test(\/t\/o\/[^"]+\.gif)/.exec(mail.parsed.html as string)![1];
    expect((await stack.http.get(pixel)).status).toBe(200);

    const record = await statusOf(project, emailId, ['OPENED']);
    expect(record).toEqual({
      id: emailId,
      projectId: project.id,
      contactId: res.body.data.emails[0].contact.id,
      templateId: null,
      campaignId: null,
      workflowExecutionId: null,
      source: 'TRANSACTIONAL',
      subject: 'Open me',
      from: `hi@${domain}`,
      to: 'opener@example.org',
      status: 'OPENED',
      messageId: `<${emailId}@${domain}>`,
      error: null,
      sentAt: expect.any(String),
      deliveredAt: null,
      openedAt: expect.any(String),
      clickedAt: null,
      bouncedAt: null,
      opens: 1,
      clicks: 0,
      createdAt: expect.any(String),
      // Contract 21: the parts as handed over, tracking included.
      html: expect.stringMatching(/^<p>Hi<\/p><img src="http:\/\/mailroom\.test\/t\/o\/[^"]+\.gif"/),
      text: 'Hi',
      events: [
        { name: 'email.sent', createdAt: expect.any(String), data: expect.objectContaining({ emailId, subject: 'Open me' }) },
        { name: 'email.opened', createdAt: expect.any(String), data: expect.objectContaining({ emailId }) },
      ],
    });
    expect(Date.parse(record.events[0].createdAt)).toBeLessThanOrEqual(Date.parse(record.events[1].createdAt));
  });
});

describe('GET /emails', () => {
  let project: TestProject;
  let contactId: string;
  let campaignId: string;
  const ids: string[] = [];

  /** 45 emails recorded directly: 30 of them in one instant (the cursor must order by id within it). */
  beforeAll(async () => {
    ({ project } = await accountWithProject(stack.http));
    const contact = await stack.http.post('/contacts', { email: 'reader@example.org' }, { key: project.secretKey });
    contactId = contact.body.id;
    [{ id: campaignId }] = await sql(
      `insert into campaigns (project_id, name, subject, body, from_address, audience_type, status) values (?, 'C', 'S', 'B', 'hi@example.com', 'ALL', 'SENT') returning id`,
      [project.id],
    );
    const rows = Array.from({ length: 45 }, (_, i) => ({
      id: crypto.randomUUID(),
      // A campaign mails a contact once: of the contact's emails, only the first is the campaign's.
      contact_id: i % 3 === 0 && (i % 5 !== 0 || i === 0) ? contactId : null,
      campaign_id: i % 5 === 0 ? campaignId : null,
      source: i % 5 === 0 ? 'CAMPAIGN' : 'TRANSACTIONAL',
      status: i % 4 === 0 ? 'BOUNCED' : 'SENT',
      to_address: i % 3 === 0 ? 'reader@example.org' : `other-${i}@example.org`,
      created_at: i < 30 ? '2026-11-20T10:00:00.123456Z' : `2026-11-21T10:00:${String(i).padStart(2, '0')}.000001Z`,
    }));
    await sql(
      `insert into emails (id, project_id, contact_id, campaign_id, source, status, subject, from_address, to_address, message_id, created_at)
       select r.id, ?, r.contact_id, r.campaign_id, r.source, r.status, 'Hello', 'hi@example.com', r.to_address, '<' || r.id || '@example.com>', r.created_at
       from jsonb_to_recordset(?::jsonb) as r(id uuid, contact_id uuid, campaign_id uuid, source text, status text, to_address text, created_at timestamptz)`,
      [project.id, JSON.stringify(rows)],
    );
    // Newest first; within one instant, the greater id first.
    ids.push(...[...rows].sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1)).map((r) => r.id));
  });

  async function walk(query: string) {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await get(project, `/emails?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((e: { id: string }) => e.id));
      expect(res.body.hasMore).toBe(res.body.cursor !== null);
      cursor = res.body.cursor;
      pages++;
    } while (cursor && pages < 50);
    return { seen, pages };
  }

  it('pages newest first by keyset, 20 by default, every email once', async () => {
    const first = await get(project, '/emails');
    expect(first.body.data).toHaveLength(20);
    expect(first.body.hasMore).toBe(true);
    const { seen, pages } = await walk('limit=7');
    expect(pages).toBe(7);
    expect(seen).toEqual(ids);
  });

  it('clamps a limit above 100 and refuses a limit that is no positive whole number', async () => {
    const all = await get(project, '/emails?limit=5000');
    expect(all.status).toBe(200);
    expect(all.body.data).toHaveLength(45);
    expect(all.body).toMatchObject({ hasMore: false, cursor: null });
    for (const bad of ['0', '-1', 'ten', '1.5']) expect((await get(project, `/emails?limit=${bad}`)).status).toBe(400);
  });

  it('filters by status, source, contactId, campaignId and to (letter case ignored), alone and together', async () => {
    const rows = await sql(`select id, status, source, contact_id, campaign_id, to_address from emails where project_id = ?`, [project.id]);
    const expected = (keep: (r: any) => boolean) => ids.filter((id) => keep(rows.find((r: any) => r.id === id)));
    expect((await walk('status=BOUNCED&limit=4')).seen).toEqual(expected((r) => r.status === 'BOUNCED'));
    expect((await walk('source=CAMPAIGN')).seen).toEqual(expected((r) => r.source === 'CAMPAIGN'));
    expect((await walk(`contactId=${contactId.toUpperCase()}&limit=5`)).seen).toEqual(expected((r) => r.contact_id === contactId));
    expect((await walk(`campaignId=${campaignId}`)).seen).toEqual(expected((r) => r.campaign_id === campaignId));
    expect((await walk('to=Reader%40EXAMPLE.org')).seen).toEqual(expected((r) => r.to_address === 'reader@example.org'));
    expect((await walk(`to=reader%40example.org&status=BOUNCED&campaignId=${campaignId}`)).seen).toEqual(
      expected((r) => r.to_address === 'reader@example.org' && r.status === 'BOUNCED' && r.campaign_id === campaignId),
    );
    // INBOUND and RECEIVED are values the filters know (mail in, contract 20), matching nothing yet.
    expect((await get(project, '/emails?source=INBOUND&status=RECEIVED')).body).toEqual({ data: [], cursor: null, hasMore: false });
    // Another project sees none of them, through any filter.
    const { project: other } = await accountWithProject(stack.http);
    expect((await get(other, `/emails?contactId=${contactId}`)).body.data).toEqual([]);
    expect((await get(other, `/emails?campaignId=${campaignId}`)).body.data).toEqual([]);
    expect((await get(other, '/emails?to=reader@example.org')).body.data).toEqual([]);
  });

  it('400 in the error envelope for an unknown status or source, a malformed id, a foreign cursor, a repeated parameter', async () => {
    const foreignCursor = Buffer.from(JSON.stringify({ t: 'x', id: 'y' })).toString('base64url');
    for (const query of [
      'status=LOST',
      'status=sent',
      'source=SMTP',
      'contactId=nope',
      'campaignId=1',
      `cursor=${foreignCursor}`,
      'cursor=%00%01garbage',
      'status=SENT&status=BOUNCED',
      `to=${'a'.repeat(400)}`,
    ]) {
      const res = await get(project, `/emails?${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body.error).toMatchObject({ code: 'BAD_REQUEST', requestId: expect.any(String) });
    }
  });

  it('answers a session with X-Project-Id like the secret key, and refuses a public key', async () => {
    const { account, project: own } = await accountWithProject(stack.http);
    const bySession = await stack.http.get('/emails', { cookie: account.cookie, headers: { 'X-Project-Id': own.id } });
    expect(bySession.status).toBe(200);
    expect(bySession.body).toEqual({ data: [], cursor: null, hasMore: false });
    const byPublicKey = await stack.http.get('/emails', { key: own.publicKey });
    expect(byPublicKey.status).toBe(401);
    expect(byPublicKey.body.error.code).toBe('INVALID_API_KEY');
  });
});
