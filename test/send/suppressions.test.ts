import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { accountWithProject, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { projectWithVerifiedDomain } from '../support/sendingProject';

/** The suppression list (contract 20): GET, POST and DELETE /suppressions, and what the send path makes of it. */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s' } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);
const as = (project: TestProject) => ({ key: project.secretKey });

async function finalStatus(project: TestProject, emailId: string) {
  return eventually(async () => {
    const res = await stack.http.get(`/emails/${emailId}`, as(project));
    if (['QUEUED', 'SENDING'].includes(res.body.status)) throw new Error(res.body.status);
    return res.body.status as string;
  });
}

describe('/suppressions', () => {
  it('POST suppresses (MANUAL, 201), then /v1/send to it is SUPPRESSED; DELETE lifts it (204) and the next send goes out; subscribed is left as it is', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const contact = await stack.http.post('/contacts', { email: 'lifted@example.org', subscribed: false }, as(project));
    expect(contact.status).toBe(201);

    const added = await stack.http.post('/suppressions', { email: '  Lifted@Example.ORG ' }, as(project));
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ email: 'lifted@example.org', reason: 'MANUAL', emailId: null, createdAt: expect.any(String) });

    const send = () => stack.http.post('/v1/send', { to: 'lifted@example.org', from: `hi@${domain}`, subject: 'Hello', body: '<p>Hello</p>' }, as(project));
    const first = await send();
    expect(first.status).toBe(200);
    expect(await finalStatus(project, first.body.data.emails[0].email)).toBe('SUPPRESSED');

    const lifted = await stack.http.delete('/suppressions/LIFTED%40example.org', as(project));
    expect(lifted.status).toBe(204);
    expect(lifted.text).toBe('');
    expect((await stack.http.get('/suppressions?email=lifted@example.org', as(project))).body.data).toEqual([]);

    const second = await send();
    const secondId = second.body.data.emails[0].email;
    expect(await finalStatus(project, secondId)).toBe('SENT');
    await smtp.waitFor((m) => m.envelopeTo.includes('lifted@example.org') && m.raw.includes(secondId));
    // Lifting a suppression is not a subscription.
    expect((await stack.http.get(`/contacts/${contact.body.id}`, as(project))).body.subscribed).toBe(false);

    const again = await stack.http.delete('/suppressions/lifted@example.org', as(project));
    expect(again.status).toBe(404);
    expect(again.body.error).toMatchObject({ code: 'RESOURCE_NOT_FOUND', requestId: expect.any(String) });
  });

  it('POST for an address already suppressed answers 200 with the existing entry (a bounce stays a bounce); concurrent duplicates never 500', async () => {
    const { project } = await accountWithProject(stack.http);
    const emailId = crypto.randomUUID();
    await sql(`insert into email_suppressions (project_id, email, reason, email_id) values (?, 'bounced@example.org', 'BOUNCE', ?)`, [project.id, emailId]);
    const existing = await stack.http.post('/suppressions', { email: 'Bounced@example.org' }, as(project));
    expect(existing.status).toBe(200);
    expect(existing.body).toEqual({ email: 'bounced@example.org', reason: 'BOUNCE', emailId, createdAt: expect.any(String) });

    const racing = await Promise.all(Array.from({ length: 12 }, () => stack.http.post('/suppressions', { email: 'race@example.org' }, as(project))));
    expect(racing.map((r) => r.status).sort()).toEqual([...Array(11).fill(200), 201]);
    expect(new Set(racing.map((r) => r.body.createdAt)).size).toBe(1);
  });

  it('GET pages newest first by keyset, filters by the whole address (letter case ignored), and shows only the project’s own entries', async () => {
    const { project } = await accountWithProject(stack.http);
    const { project: other } = await accountWithProject(stack.http);
    const rows = Array.from({ length: 25 }, (_, i) => ({
      email: `s${String(i).padStart(2, '0')}@example.org`,
      reason: ['BOUNCE', 'COMPLAINT', 'MANUAL'][i % 3],
      // Ten share one instant: the address orders them.
      created_at: i < 10 ? '2026-11-20T10:00:00.000001Z' : `2026-11-21T10:00:${String(i).padStart(2, '0')}.5Z`,
    }));
    await sql(
      `insert into email_suppressions (project_id, email, reason, created_at)
       select ?, r.email, r.reason, r.created_at from jsonb_to_recordset(?::jsonb) as r(email text, reason text, created_at timestamptz)`,
      [project.id, JSON.stringify(rows)],
    );
    await stack.http.post('/suppressions', { email: 'elsewhere@example.org' }, as(other));
    const expected = [...rows]
      .sort((a, b) => (a.created_at === b.created_at ? (a.email < b.email ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
      .map((r) => r.email);

    const first = await stack.http.get('/suppressions', as(project));
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(20);
    expect(first.body.hasMore).toBe(true);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await stack.http.get(`/suppressions?limit=4${cursor ? `&cursor=${cursor}` : ''}`, as(project));
      seen.push(...res.body.data.map((e: { email: string }) => e.email));
      cursor = res.body.cursor;
    } while (cursor);
    expect(seen).toEqual(expected);

    const one = await stack.http.get('/suppressions?email=S07%40Example.org', as(project));
    expect(one.body).toEqual({
      data: [{ email: 's07@example.org', reason: 'COMPLAINT', emailId: null, createdAt: '2026-11-20T10:00:00.000Z' }],
      cursor: null,
      hasMore: false,
    });
    expect((await stack.http.get('/suppressions?email=elsewhere@example.org', as(project))).body.data).toEqual([]);
    expect((await stack.http.delete('/suppressions/elsewhere@example.org', as(project))).status).toBe(404);
    expect((await stack.http.get('/suppressions?limit=500', as(project))).body.data).toHaveLength(25);
  });

  it('bad input is a 4xx in the error envelope, never a 500', async () => {
    const { project } = await accountWithProject(stack.http);
    const bodies: unknown[] = [
      {},
      { email: null },
      { email: 42 },
      { email: ['a@example.org'] },
      { email: 'not an email' },
      { email: 'a@example.org\r\nBcc: b@example.org' },
      { email: 'a\nb@example.org' },
      { email: 'jörg@exämple.org' },
      { email: `${'a'.repeat(250)}@example.org` },
      { email: '' },
    ];
    for (const body of bodies) {
      const res = await stack.http.post('/suppressions', body, as(project));
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_ERROR', errors: [expect.objectContaining({ field: 'email' })] });
    }
    // A JSON body that is no object: refused as the JSON middleware or validation refuses it on every route.
    for (const body of ['a@example.org', [], 7]) {
      const res = await stack.http.post('/suppressions', body, as(project));
      expect([400, 422]).toContain(res.status);
      expect(res.body.error.code).toMatch(/^(BAD_REQUEST|INVALID_REQUEST_BODY|VALIDATION_ERROR)$/);
    }
    const malformed = await stack.http.request('POST', '/suppressions', {
      rawBody: '{"email":',
      headers: { 'Content-Type': 'application/json' },
      key: project.secretKey,
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('INVALID_REQUEST_BODY');

    for (const query of ['email=nope', 'limit=0', 'cursor=abc', `email=${encodeURIComponent('a@b.org\r\n')}x`]) {
      const res = await stack.http.get(`/suppressions?${query}`, as(project));
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body.error.code).toBe('BAD_REQUEST');
    }
    for (const path of ['/suppressions/nope', `/suppressions/${'a'.repeat(300)}`, '/suppressions/%E0%A4%A', '/suppressions/a%0D%0A%40example.org']) {
      const res = await stack.http.delete(path, as(project));
      expect({ path, status: res.status }).toEqual({ path, status: expect.any(Number) });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    expect((await stack.http.get('/suppressions')).status).toBe(401);
    expect((await stack.http.post('/suppressions', { email: 'a@example.org' }, { key: project.publicKey })).status).toBe(401);
  });
});
