import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import { HttpClient } from '../support/http';
import { startApiServer } from '../../api/server';
import { accountWithProject, type TestProject } from '../support/accounts';

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
/** A project whose domain is verified, shared by tests that need nothing else. */
let shared: { project: TestProject; domain: string };

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url } });
  shared = await projectWithVerifiedDomain(stack, dns);
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

const draft = (domain: string, overrides: Record<string, unknown> = {}) => ({
  name: 'November news',
  subject: 'News for {{firstName ?? "you"}}',
  body: '<p>Hello {{firstName ?? "friend"}}</p>',
  from: `news@${domain}`,
  audienceType: 'ALL',
  ...overrides,
});

const api = (project: TestProject) => ({
  get: (path: string) => stack.http.get(path, { key: project.secretKey }),
  post: (path: string, body?: unknown) => stack.http.post(path, body, { key: project.secretKey }),
  put: (path: string, body?: unknown) => stack.http.put(path, body, { key: project.secretKey }),
  delete: (path: string) => stack.http.delete(path, { key: project.secretKey }),
});

async function createCampaign(project: TestProject, domain: string, overrides: Record<string, unknown> = {}) {
  const res = await api(project).post('/campaigns', draft(domain, overrides));
  expect(res.status).toBe(201);
  return res.body.data;
}

async function insertSegment(projectId: string, name = 'VIP'): Promise<string> {
  const [row] = await sql(`insert into segments (project_id, name, slug, type) values (?, ?, ?, 'STATIC') returning id`, [projectId, name, name.toLowerCase()]);
  return row.id;
}

const setStatus = (id: string, status: string) => sql(`update campaigns set status = ? where id = ?`, [status, id]);

function fieldsOf(res: { body: any }): string[] {
  return (res.body.error?.errors ?? []).map((e: { field: string }) => e.field);
}

describe('POST /campaigns', () => {
  it('creates a DRAFT (201, wrapped) with MARKETING as the default type and zero counters; GET answers the same campaign', async () => {
    const { project, domain } = shared;
    const res = await api(project).post('/campaigns', draft(domain, { from: ` News@${domain.toUpperCase()} `, fromName: 'The Team', description: 'monthly' }));
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'November news',
      description: 'monthly',
      subject: 'News for {{firstName ?? "you"}}',
      body: '<p>Hello {{firstName ?? "friend"}}</p>',
      from: `news@${domain}`,
      fromName: 'The Team',
      replyTo: null,
      type: 'MARKETING',
      status: 'DRAFT',
      stopReason: null,
      audienceType: 'ALL',
      segmentId: null,
      audienceCondition: null,
      scheduledFor: null,
      totalRecipients: 0,
      sentCount: 0,
      deliveredCount: 0,
      openedCount: 0,
      clickedCount: 0,
      bouncedCount: 0,
      projectId: project.id,
      sentAt: null,
      cancelledAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const got = await api(project).get(`/campaigns/${res.body.data.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body.data);
  });

  it('keeps unicode names and subjects as given', async () => {
    const c = await createCampaign(shared.project, shared.domain, { name: 'Ünïcødé 📨 news', subject: 'Grüße {{firstName}} ✨' });
    expect(c.name).toBe('Ünïcødé 📨 news');
    expect(c.subject).toBe('Grüße {{firstName}} ✨');
  });

  it('answers 403 (code INTERNAL_SERVER_ERROR, naming the domain) for an unverified sender domain', async () => {
    const res = await api(shared.project).post('/campaigns', draft('not-verified.example.org'));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('INTERNAL_SERVER_ERROR');
    expect(res.body.error.message).toContain('not-verified.example.org');
  });

  it('refuses malformed bodies with 422 naming each field', async () => {
    const post = (body: unknown) => api(shared.project).post('/campaigns', body);
    const d = draft(shared.domain);
    const cases: Array<[unknown, string]> = [
      [{ ...d, name: undefined }, 'name'],
      [{ ...d, subject: undefined }, 'subject'],
      [{ ...d, body: undefined }, 'body'],
      [{ ...d, from: undefined }, 'from'],
      [{ ...d, audienceType: undefined }, 'audienceType'],
      [{ ...d, audienceType: 'EVERYONE' }, 'audienceType'],
      [{ ...d, type: 'NEWSLETTER' }, 'type'],
      [{ ...d, name: 42 }, 'name'],
      [{ ...d, name: '   ' }, 'name'],
      [{ ...d, subject: 'Hi\r\nBcc: victim@example.com' }, 'subject'],
      [{ ...d, subject: 'x'.repeat(999) }, 'subject'],
      [{ ...d, subject: ['a'] }, 'subject'],
      [{ ...d, body: '   ' }, 'body'],
      [{ ...d, from: 'not an address' }, 'from'],
      [{ ...d, replyTo: 'nope' }, 'replyTo'],
      [{ ...d, fromName: 'A\nB' }, 'fromName'],
      [{ ...d, description: 'x'.repeat(1001) }, 'description'],
      [{ ...d, segmentId: 'not-a-uuid', audienceType: 'SEGMENT' }, 'segmentId'],
      [{ ...d, subject: 'Hi {{#if}}' }, 'subject'],
      [{ ...d, body: '<p>{{#each items}}unclosed</p>' }, 'body'],
      [{ ...d, body: '<p>{{unknownHelper "x" 1}}</p>' }, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await post(body);
      expect({ field, status: res.status, code: res.body.error?.code }).toEqual({ field, status: 422, code: 'VALIDATION_ERROR' });
      expect(fieldsOf(res)).toContain(field);
    }
    // A body that is not a JSON object: an array is the wrong type, anything else not a JSON body at all.
    expect((await post([])).status).toBe(422);
    for (const body of ['text', 42]) expect((await post(body)).body.error.code).toBe('INVALID_REQUEST_BODY');
    const nothing = await stack.http.request('POST', '/campaigns', {
      key: shared.project.secretKey,
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(nothing.status).toBe(400);
  });

  it('never answers 500 to odd strings (lone surrogates, zero-width, right-to-left marks)', async () => {
    for (const name of ['\ud800 lone', 'zero\u200bwidth', '\u202etxt.exe', '\ufeffbom']) {
      const res = await api(shared.project).post('/campaigns', draft(shared.domain, { name, subject: name }));
      expect({ name, ok: res.status === 201 || res.status === 422 || res.status === 400 }).toEqual({ name, ok: true });
    }
  });

  it('accepts a subject of exactly 998 characters', async () => {
    const c = await createCampaign(shared.project, shared.domain, { subject: 's'.repeat(998) });
    expect(c.subject).toHaveLength(998);
  });

  it('needs the secret key', async () => {
    expect((await stack.http.post('/campaigns', draft(shared.domain), { key: shared.project.publicKey })).status).toBe(401);
    expect((await stack.http.get('/campaigns')).status).toBe(401);
  });
});

describe('audiences', () => {
  it("SEGMENT needs a segment of the project: missing 422, unknown or another project's 404 SEGMENT_NOT_FOUND", async () => {
    const { project, domain } = shared;
    const missing = await api(project).post('/campaigns', draft(domain, { audienceType: 'SEGMENT' }));
    expect(missing.status).toBe(422);
    expect(fieldsOf(missing)).toEqual(['segmentId']);

    const unknown = await api(project).post('/campaigns', draft(domain, { audienceType: 'SEGMENT', segmentId: crypto.randomUUID() }));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SEGMENT_NOT_FOUND');

    const other = await accountWithProject(stack.http);
    const foreign = await insertSegment(other.project.id);
    const res = await api(project).post('/campaigns', draft(domain, { audienceType: 'SEGMENT', segmentId: foreign }));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('SEGMENT_NOT_FOUND');

    const own = await insertSegment(project.id, 'Customers');
    const ok = await createCampaign(project, domain, { audienceType: 'SEGMENT', segmentId: own.toUpperCase() });
    expect(ok).toMatchObject({ audienceType: 'SEGMENT', segmentId: own, audienceCondition: null });
  });

  it('FILTERED needs a well-formed condition tree', async () => {
    const { project, domain } = shared;
    const missing = await api(project).post('/campaigns', draft(domain, { audienceType: 'FILTERED' }));
    expect(missing.status).toBe(422);
    expect(fieldsOf(missing)).toEqual(['audienceCondition']);

    for (const condition of ['x', 42, { logic: 'XOR', groups: [] }, { logic: 'AND', groups: [{}] }, { logic: 'AND', groups: [{ filters: [{ field: 42 }] }] }]) {
      const res = await api(project).post('/campaigns', draft(domain, { audienceType: 'FILTERED', audienceCondition: condition }));
      expect(res.status).toBe(422);
      expect(fieldsOf(res).every((f) => f.startsWith('audienceCondition'))).toBe(true);
    }

    // Nested far beyond any sensible tree: refused (the JSON depth limit), not a stack overflow.
    const levels = 2000;
    const deep =
      '{"logic":"AND","groups":[{"conditions":'.repeat(levels) +
      '{"logic":"AND","groups":[{"filters":[{"field":"email","operator":"exists"}]}]}' +
      '}]}'.repeat(levels);
    const body = JSON.stringify(draft(domain, { audienceType: 'FILTERED', audienceCondition: '__TREE__' })).replace('"__TREE__"', deep);
    const tooDeep = await stack.http.request('POST', '/campaigns', { key: project.secretKey, rawBody: body, headers: { 'content-type': 'application/json' } });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error.code).toBe('INVALID_REQUEST_BODY');

    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    const ok = await createCampaign(project, domain, { audienceType: 'FILTERED', audienceCondition: condition });
    expect(ok).toMatchObject({ audienceType: 'FILTERED', audienceCondition: condition, segmentId: null });
  });

  it('ALL keeps neither a segment nor a condition given alongside', async () => {
    const segmentId = await insertSegment(shared.project.id, 'Ignored');
    const c = await createCampaign(shared.project, shared.domain, {
      audienceType: 'ALL',
      segmentId,
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] },
    });
    expect(c).toMatchObject({ audienceType: 'ALL', segmentId: null, audienceCondition: null });
  });
});

describe('GET /campaigns', () => {
  it('pages, filters by status, searches name, subject and sender, and sorts', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const a = await createCampaign(project, domain, { name: 'alpha', subject: 'First' });
    const b = await createCampaign(project, domain, { name: 'Bravo', subject: 'Second 50% off' });
    const c = await createCampaign(project, domain, { name: 'charlie', subject: 'Third', from: `promo@${domain}` });
    await setStatus(b.id, 'SENT');
    const list = (query = '') => api(project).get(`/campaigns${query}`);

    const all = await list();
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ page: 1, pageSize: 20, total: 3, totalPages: 1 });
    expect(all.body.data.map((x: any) => x.id)).toEqual([c.id, b.id, a.id]);

    const paged = await list('?pageSize=2&page=2');
    expect(paged.body).toMatchObject({ page: 2, pageSize: 2, total: 3, totalPages: 2 });
    expect(paged.body.data.map((x: any) => x.id)).toEqual([a.id]);

    expect((await list('?status=SENT')).body.data.map((x: any) => x.id)).toEqual([b.id]);
    expect((await list('?status=DRAFT')).body.total).toBe(2);
    expect((await list('?search=PROMO@')).body.data.map((x: any) => x.id)).toEqual([c.id]);
    expect((await list('?search=50%25')).body.data.map((x: any) => x.id)).toEqual([b.id]);
    expect((await list('?search=ALPH')).body.data.map((x: any) => x.id)).toEqual([a.id]);
    expect((await list('?sort=name&dir=asc')).body.data.map((x: any) => x.name)).toEqual(['alpha', 'Bravo', 'charlie']);
    // Unrecognised sort and dir fall back to the defaults; pageSize is clamped.
    expect((await list('?sort=colour&dir=sideways')).body.data.map((x: any) => x.id)).toEqual([c.id, b.id, a.id]);
    expect((await list('?pageSize=5000')).body.pageSize).toBe(100);

    for (const bad of ['?status=PAUSED', '?status=draft', '?page=0', '?page=x', '?pageSize=0', '?status=DRAFT&status=SENT']) {
      const res = await list(bad);
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
      expect(res.body.error.code).toBe('BAD_REQUEST');
    }
  });

  it("lists only the key's project", async () => {
    const other = await accountWithProject(stack.http);
    const res = await api(other.project).get('/campaigns');
    expect(res.body).toMatchObject({ data: [], total: 0, totalPages: 0 });
  });
});

describe('PUT /campaigns/:id', () => {
  it('updates the fields given in DRAFT and SCHEDULED, validating as on create', async () => {
    const { project, domain } = shared;
    const c = await createCampaign(project, domain);
    const res = await api(project).put(`/campaigns/${c.id}`, { name: 'Renamed', subject: 'New {{x}}', fromName: 'Ops', type: 'TRANSACTIONAL' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: c.id, name: 'Renamed', subject: 'New {{x}}', body: c.body, fromName: 'Ops', type: 'TRANSACTIONAL', status: 'DRAFT' });
    expect((await api(project).get(`/campaigns/${c.id}`)).body.name).toBe('Renamed');

    expect((await api(project).put(`/campaigns/${c.id}`, { subject: 'a\nb' })).status).toBe(422);
    expect((await api(project).put(`/campaigns/${c.id}`, { body: '{{#if}}' })).status).toBe(422);
    expect((await api(project).put(`/campaigns/${c.id}`, { audienceType: 'SEGMENT' })).status).toBe(422);
    const unverified = await api(project).put(`/campaigns/${c.id}`, { from: 'x@unverified.example.net' });
    expect(unverified.status).toBe(403);
    expect(unverified.body.error.code).toBe('INTERNAL_SERVER_ERROR');
    const cleared = await api(project).put(`/campaigns/${c.id}`, { fromName: null, description: '' });
    expect(cleared.body).toMatchObject({ fromName: null, description: null, name: 'Renamed' });

    await setStatus(c.id, 'SCHEDULED');
    const scheduled = await api(project).put(`/campaigns/${c.id}`, { name: 'Still editable' });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body).toMatchObject({ name: 'Still editable', status: 'SCHEDULED' });
  });

  it('answers 400 in SENDING, SENT and CANCELLED, and changes nothing', async () => {
    const { project, domain } = shared;
    for (const status of ['SENDING', 'SENT', 'CANCELLED']) {
      const c = await createCampaign(project, domain);
      await setStatus(c.id, status);
      const res = await api(project).put(`/campaigns/${c.id}`, { name: 'Too late' });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('BAD_REQUEST');
      expect(res.body.error.message).toContain(status);
      expect((await api(project).get(`/campaigns/${c.id}`)).body.name).toBe('November news');
    }
  });
});

describe('DELETE /campaigns/:id', () => {
  it('deletes a DRAFT (204, empty) and answers 404 afterwards', async () => {
    const c = await createCampaign(shared.project, shared.domain);
    const res = await api(shared.project).delete(`/campaigns/${c.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const again = await api(shared.project).get(`/campaigns/${c.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('CAMPAIGN_NOT_FOUND');
    expect((await api(shared.project).delete(`/campaigns/${c.id}`)).status).toBe(404);
  });

  it('answers 409 for SCHEDULED and SENDING, and deletes SENT and CANCELLED ones', async () => {
    for (const status of ['SCHEDULED', 'SENDING']) {
      const c = await createCampaign(shared.project, shared.domain);
      await setStatus(c.id, status);
      const res = await api(shared.project).delete(`/campaigns/${c.id}`);
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'CONFLICT', details: { status } });
      expect((await api(shared.project).get(`/campaigns/${c.id}`)).status).toBe(200);
    }
    for (const status of ['SENT', 'CANCELLED']) {
      const c = await createCampaign(shared.project, shared.domain);
      await setStatus(c.id, status);
      expect((await api(shared.project).delete(`/campaigns/${c.id}`)).status).toBe(204);
    }
  });
});

describe('POST /campaigns/:id/duplicate', () => {
  it('creates a new DRAFT (201) named "<name> (copy)" with the content and audience and zero counters', async () => {
    const { project, domain } = shared;
    const condition = { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    const c = await createCampaign(project, domain, { audienceType: 'FILTERED', audienceCondition: condition, replyTo: `support@${domain}` });
    await sql(`update campaigns set status = 'SENT', sent_count = 12, total_recipients = 12, sent_at = now() where id = ?`, [c.id]);
    const res = await api(project).post(`/campaigns/${c.id}/duplicate`);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'November news (copy)',
      subject: c.subject,
      body: c.body,
      replyTo: `support@${domain}`,
      audienceType: 'FILTERED',
      audienceCondition: condition,
      status: 'DRAFT',
      totalRecipients: 0,
      sentCount: 0,
      sentAt: null,
      scheduledFor: null,
    });
    expect(res.body.id).not.toBe(c.id);

    // A name at the limit is shortened to fit " (copy)", never cutting an emoji in half.
    const longName = await createCampaign(project, domain, { name: 'n'.repeat(192) + '😀' + 'n'.repeat(6) });
    const longCopy = await api(project).post(`/campaigns/${longName.id}/duplicate`);
    expect(longCopy.body.name).toBe('n'.repeat(192) + ' (copy)');
  });
});

describe('POST /campaigns/:id/test', () => {
  it('sends one rendered copy with a [TEST] subject to a real SMTP server; it counts nowhere and creates no contact', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const c = await createCampaign(project, domain, { subject: 'Hi {{firstName ?? "there"}}', body: '<p>Plan: {{plan ?? "none"}}</p>' });
    await api(project).post('/contacts', { email: 'ada@example.org', data: { firstName: 'Ada', plan: 'pro' } });

    const toContact = await api(project).post(`/campaigns/${c.id}/test`, { email: ' Ada@Example.org ' });
    expect(toContact.status).toBe(200);
    expect(toContact.body).toMatchObject({ success: true, data: { to: 'ada@example.org', subject: '[TEST] Hi Ada' } });
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('ada@example.org') && m.parsed.subject === '[TEST] Hi Ada', 30_000);
    expect(mail.parsed.html).toContain('Plan: pro');
    // The copy looks like the real MARKETING mail: unsubscribe footer and one-click headers.
    expect(mail.parsed.html).toContain('http://mailroom.test/unsubscribe/');
    expect(mail.raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);
    expect(mail.parsed.from?.value[0].address).toBe(`news@${domain}`);

    const stranger = await api(project).post(`/campaigns/${c.id}/test`, { email: 'stranger@example.org' });
    expect(stranger.status).toBe(200);
    const other = await smtp.waitFor((m) => m.envelopeTo.includes('stranger@example.org'), 30_000);
    expect(other.parsed.subject).toBe('[TEST] Hi there');
    expect(other.parsed.html).toContain('Plan: none');

    const contacts = await api(project).get('/contacts');
    expect(contacts.body.data.map((x: any) => x.email)).toEqual(['ada@example.org']);
    const stats = await api(project).get(`/campaigns/${c.id}/stats`);
    expect(stats.body.data).toMatchObject({ sentCount: 0, deliveredCount: 0, totalRecipients: 0 });
    expect((await api(project).get(`/campaigns/${c.id}`)).body.status).toBe('DRAFT');
  });

  it('refuses a missing or malformed address (422) and a suppressed one (422)', async () => {
    const c = await createCampaign(shared.project, shared.domain);
    for (const body of [{}, { email: 'nope' }, { email: 42 }, { email: 'a\r\n@example.org' }, { email: `${'a'.repeat(250)}@example.org` }]) {
      const res = await api(shared.project).post(`/campaigns/${c.id}/test`, body);
      expect(res.status).toBe(422);
      expect(fieldsOf(res)).toEqual(['email']);
    }
    await sql(`insert into email_suppressions (project_id, email, reason) values (?, 'bounced@example.org', 'BOUNCE')`, [shared.project.id]);
    const suppressed = await api(shared.project).post(`/campaigns/${c.id}/test`, { email: 'bounced@example.org' });
    expect(suppressed.status).toBe(422);
  });
});

describe('GET /campaigns/:id/stats', () => {
  it("counts the campaign's emails and answers rates in percent of sentCount", async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const c = await createCampaign(project, domain);
    const empty = await api(project).get(`/campaigns/${c.id}/stats`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      success: true,
      data: {
        totalRecipients: 0,
        sentCount: 0,
        deliveredCount: 0,
        openedCount: 0,
        clickedCount: 0,
        bouncedCount: 0,
        complainedCount: 0,
        unsubscribedCount: 0,
        openRate: 0,
        clickRate: 0,
        bounceRate: 0,
        deliveryRate: 0,
      },
    });

    // Eight recipients: 6 delivered (one only known through its open), 3 opened, 1 clicked, 1 bounced, 1 complained.
    const contacts: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await api(project).post('/contacts', { email: `r${i}@example.org` });
      contacts.push(res.body.id);
    }
    const rows: Array<Record<string, boolean>> = [
      { delivered: true, opened: true, clicked: true },
      { delivered: true, opened: true },
      { opened: true },
      { delivered: true },
      { delivered: true },
      { delivered: true, complained: true },
      { bounced: true },
      {},
    ];
    for (const [i, r] of rows.entries()) {
      await sql(
        `insert into emails (id, project_id, contact_id, campaign_id, source, type, subject, from_address, to_address, status, message_id, sent_at,
                             delivered_at, opened_at, clicked_at, bounced_at, complained_at)
         values (gen_random_uuid(), ?, ?, ?, 'CAMPAIGN', 'MARKETING', 'News', ?, ?, 'SENT', 'x', now() - interval '1 hour',
                 case when ? then now() end, case when ? then now() end, case when ? then now() end, case when ? then now() end, case when ? then now() end)`,
        [project.id, contacts[i], c.id, `news@${domain}`, `r${i}@example.org`, !!r.delivered, !!r.opened, !!r.clicked, !!r.bounced, !!r.complained],
      );
    }
    // An email of another campaign and a transactional one count for neither.
    await sql(
      `insert into emails (id, project_id, contact_id, source, subject, from_address, to_address, message_id, delivered_at, opened_at)
       values (gen_random_uuid(), ?, ?, 'TRANSACTIONAL', 'Receipt', ?, 'r0@example.org', 'y', now(), now())`,
      [project.id, contacts[0], `news@${domain}`],
    );
    await sql(`update campaigns set status = 'SENT', total_recipients = 8, sent_count = 8, sent_at = now() where id = ?`, [c.id]);
    // Two recipients unsubscribe after the campaign reached them (one of them twice over); another was already unsubscribed.
    await sql(
      `insert into events (project_id, contact_id, name, source, created_at) values (?, ?, 'contact.unsubscribed', 'SYSTEM', now() - interval '2 days')`,
      [project.id, contacts[7]],
    );
    for (const i of [1, 4]) expect((await stack.http.patch(`/contacts/${contacts[i]}`, { subscribed: false }, { key: project.secretKey })).status).toBe(200);
    await stack.http.patch(`/contacts/${contacts[4]}`, { subscribed: true }, { key: project.secretKey });
    await stack.http.patch(`/contacts/${contacts[4]}`, { subscribed: false }, { key: project.secretKey });

    const stats = await api(project).get(`/campaigns/${c.id}/stats`);
    expect(stats.body.data).toEqual({
      totalRecipients: 8,
      sentCount: 8,
      deliveredCount: 6,
      openedCount: 3,
      clickedCount: 1,
      bouncedCount: 1,
      complainedCount: 1,
      unsubscribedCount: 2,
      openRate: 37.5,
      clickRate: 12.5,
      bounceRate: 12.5,
      deliveryRate: 75,
    });
    // The campaign record carries the same counters.
    expect((await api(project).get(`/campaigns/${c.id}`)).body).toMatchObject({
      sentCount: 8,
      deliveredCount: 6,
      openedCount: 3,
      clickedCount: 1,
      bouncedCount: 1,
    });
    const listed = (await api(project).get('/campaigns')).body.data.find((x: any) => x.id === c.id);
    expect(listed).toMatchObject({ deliveredCount: 6, openedCount: 3 });
  });
});

describe('POST /campaigns/:id/send and /cancel', () => {
  const describeWorkflow = (id: string) => stack.temporal.workflow.getHandle(`campaign-${id}`).describe();

  /**
   * Starts the campaign's campaign-<id> workflow on a task queue no worker polls, as a start that
   * timed out but went through would have left it: the API's send takes it as started, and nothing
   * runs it, so the campaign stays SENDING (the shared project has no contacts: a send it runs
   * itself may be SENT by the time of the test's next request).
   */
  const startIdleRun = (id: string) =>
    stack.temporal.workflow.start('campaignSendWorkflow', {
      workflowId: `campaign-${id}`,
      taskQueue: `${stack.config.temporalTaskQueue}-nobody`,
      args: [{ campaignId: id, projectId: shared.project.id }],
    });

  it('sends now: SENDING, the campaign-<id> workflow started with its search attributes; a second send is a 400', async () => {
    const { project, domain } = shared;
    const c = await createCampaign(project, domain);
    const res = await api(project).post(`/campaigns/${c.id}/send`, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { id: c.id, name: c.name, status: 'SENDING', scheduledFor: null }, message: 'Campaign is being sent' });
    const wf = await describeWorkflow(c.id);
    expect(wf.type).toBe('campaignSendWorkflow');
    expect(wf.taskQueue).toBe(stack.config.temporalTaskQueue);
    expect(
      wf.typedSearchAttributes
        .getAll()
        .map((p) => [p.key.name, p.value])
        .sort(),
    ).toEqual(
      expect.arrayContaining([
        ['CampaignId', c.id],
        ['ProjectId', project.id],
      ]),
    );

    // That run may already have ended SENT (no contacts): the second send goes to a campaign held SENDING.
    const sending = await createCampaign(project, domain);
    const idle = await startIdleRun(sending.id);
    expect((await api(project).post(`/campaigns/${sending.id}/send`, {})).body.data.status).toBe('SENDING');
    const again = await api(project).post(`/campaigns/${sending.id}/send`, { scheduledFor: null });
    expect(again.status).toBe(400);
    expect(again.body.error.message).toContain('SENDING');
    expect((await api(project).put(`/campaigns/${sending.id}`, { name: 'x' })).status).toBe(400);
    expect((await api(project).delete(`/campaigns/${sending.id}`)).status).toBe(409);
    await idle.terminate();
  });

  it('schedules with any date a parser accepts; a past date sends now', async () => {
    const { project, domain } = shared;
    const when = new Date(Date.now() + 86_400_000);
    const c = await createCampaign(project, domain);
    const res = await api(project).post(`/campaigns/${c.id}/send`, { scheduledFor: when.toUTCString() });
    expect(res.status).toBe(200);
    const iso = new Date(Math.floor(when.getTime() / 1000) * 1000).toISOString();
    expect(res.body).toEqual({
      success: true,
      data: { id: c.id, name: c.name, status: 'SCHEDULED', scheduledFor: iso },
      message: `Campaign scheduled for ${iso}`,
    });
    expect((await api(project).get(`/campaigns/${c.id}`)).body).toMatchObject({ status: 'SCHEDULED', scheduledFor: iso });
    expect((await describeWorkflow(c.id)).type).toBe('campaignSendWorkflow');

    const epoch = await createCampaign(project, domain);
    const byNumber = await api(project).post(`/campaigns/${epoch.id}/send`, { scheduledFor: when.getTime() });
    expect(byNumber.body.data).toMatchObject({ status: 'SCHEDULED', scheduledFor: when.toISOString() });

    const past = await createCampaign(project, domain);
    const now = await api(project).post(`/campaigns/${past.id}/send`, { scheduledFor: '2001-02-03T04:05:06Z' });
    expect(now.body).toMatchObject({ data: { status: 'SENDING', scheduledFor: null }, message: 'Campaign is being sent' });
  });

  it('refuses to send a draft whose segment was deleted (422) or whose sender domain is no longer verified (403)', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const segmentId = await insertSegment(project.id, 'Gone soon');
    const c = await createCampaign(project, domain, { audienceType: 'SEGMENT', segmentId });
    await sql(`delete from segments where id = ?`, [segmentId]);
    expect((await api(project).get(`/campaigns/${c.id}`)).body).toMatchObject({ audienceType: 'SEGMENT', segmentId: null });
    const orphan = await api(project).post(`/campaigns/${c.id}/send`, {});
    expect(orphan.status).toBe(422);
    expect(fieldsOf(orphan)).toEqual(['segmentId']);

    const other = await createCampaign(project, domain);
    const domains = await api(project).get(`/domains/project/${project.id}`);
    for (const d of domains.body) expect((await api(project).delete(`/domains/${d.id}`)).status).toBe(204);
    const unverified = await api(project).post(`/campaigns/${other.id}/send`, {});
    expect(unverified.status).toBe(403);
    expect(unverified.body.error.code).toBe('INTERNAL_SERVER_ERROR');
    expect((await api(project).get(`/campaigns/${other.id}`)).body.status).toBe('DRAFT');
  });

  it('puts the campaign back to DRAFT and answers 503 when Temporal cannot be reached', async () => {
    // A second API on the same database whose Temporal address answers nothing.
    const cut = await startApiServer({ ...stack.config, temporalAddress: '127.0.0.1:1' }, stack.logger, { host: '127.0.0.1' });
    try {
      const c = await createCampaign(shared.project, shared.domain);
      const res = await new HttpClient(cut.url).post(`/campaigns/${c.id}/send`, {}, { key: shared.project.secretKey });
      expect(res.status).toBe(503);
      expect(res.body.error.message).toContain('still a draft');
      expect((await api(shared.project).get(`/campaigns/${c.id}`)).body).toMatchObject({ status: 'DRAFT', scheduledFor: null });
      // Once Temporal answers again, the same send goes through.
      expect((await api(shared.project).post(`/campaigns/${c.id}/send`, {})).body.data.status).toBe('SENDING');
    } finally {
      await cut.close();
    }
  });

  it('answers 400 for an unparseable date and leaves the campaign a DRAFT', async () => {
    const c = await createCampaign(shared.project, shared.domain);
    for (const scheduledFor of ['tomorrow-ish', '', '2026-13-45T99:00:00Z', true, { at: 1 }, [1], 1e20, '+275760-09-13T00:00:00.000Z', 'x'.repeat(10_000)]) {
      const res = await api(shared.project).post(`/campaigns/${c.id}/send`, { scheduledFor });
      expect({ scheduledFor, status: res.status }).toEqual({ scheduledFor, status: 400 });
      expect(res.body.error.code).toBe('BAD_REQUEST');
    }
    expect((await api(shared.project).get(`/campaigns/${c.id}`)).body.status).toBe('DRAFT');
  });

  it('takes a campaign-<id> workflow already running (a start retried after a timeout) as started', async () => {
    const c = await createCampaign(shared.project, shared.domain);
    await startIdleRun(c.id);
    const res = await api(shared.project).post(`/campaigns/${c.id}/send`, {});
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('SENDING');
  });

  it('starts once when two sends race', async () => {
    const c = await createCampaign(shared.project, shared.domain);
    const results = await Promise.all(Array.from({ length: 4 }, () => api(shared.project).post(`/campaigns/${c.id}/send`, {})));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
    const history = await stack.temporal.workflow.getHandle(`campaign-${c.id}`).fetchHistory();
    expect(history.events?.filter((e) => e.workflowExecutionStartedEventAttributes)).toHaveLength(1);
    // Visibility lags a little behind the start: wait for it, then there must be exactly one run.
    await eventually(async () => {
      const runs: string[] = [];
      for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = "campaign-${c.id}"` })) runs.push(wf.runId);
      expect(runs).toHaveLength(1);
    });
  });

  it('cancels a SCHEDULED or SENDING campaign (CANCELLED, workflow cancel requested); other states answer 400', async () => {
    const { project, domain } = shared;
    for (const scheduledFor of [new Date(Date.now() + 3_600_000).toISOString(), null]) {
      const c = await createCampaign(project, domain);
      // Sent now, it is held SENDING (its run may otherwise be SENT before the cancel); scheduled an hour ahead, its own run waits.
      const idle = scheduledFor ? null : await startIdleRun(c.id);
      expect((await api(project).post(`/campaigns/${c.id}/send`, { scheduledFor })).status).toBe(200);
      const res = await api(project).post(`/campaigns/${c.id}/cancel`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, data: { id: c.id, status: 'CANCELLED', cancelledAt: expect.any(String) } });
      expect((await api(project).get(`/campaigns/${c.id}`)).body).toMatchObject({ status: 'CANCELLED', cancelledAt: res.body.data.cancelledAt });
      // Temporal buffers the request while a workflow task is in flight, so it shows in the history shortly after.
      await eventually(async () => {
        const history = await stack.temporal.workflow.getHandle(`campaign-${c.id}`).fetchHistory();
        expect(history.events?.some((e) => e.workflowExecutionCancelRequestedEventAttributes)).toBe(true);
      });

      const twice = await api(project).post(`/campaigns/${c.id}/cancel`);
      expect(twice.status).toBe(400);
      expect((await api(project).post(`/campaigns/${c.id}/send`)).status).toBe(400);
      expect((await api(project).delete(`/campaigns/${c.id}`)).status).toBe(204);
      await idle?.terminate();
    }
    for (const status of ['DRAFT', 'SENT']) {
      const c = await createCampaign(project, domain);
      await setStatus(c.id, status);
      const res = await api(project).post(`/campaigns/${c.id}/cancel`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain(status);
    }
  });

  it('cancels a SENDING campaign whose workflow is gone without complaint', async () => {
    const c = await createCampaign(shared.project, shared.domain);
    await setStatus(c.id, 'SENDING');
    const res = await api(shared.project).post(`/campaigns/${c.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('CANCELLED');
  });
});

describe('ids', () => {
  it("answers 404 CAMPAIGN_NOT_FOUND for another project's campaign, unknown and malformed ids on every endpoint", async () => {
    const c = await createCampaign(shared.project, shared.domain);
    const other = await accountWithProject(stack.http);
    const o = api(other.project);
    for (const id of [c.id, crypto.randomUUID(), 'nope', '1;drop table campaigns', '%E2%9C%A8']) {
      const answers = await Promise.all([
        o.get(`/campaigns/${id}`),
        o.put(`/campaigns/${id}`, { name: 'x' }),
        o.delete(`/campaigns/${id}`),
        o.post(`/campaigns/${id}/duplicate`),
        o.post(`/campaigns/${id}/send`, {}),
        o.post(`/campaigns/${id}/cancel`),
        o.post(`/campaigns/${id}/test`, { email: 'a@example.org' }),
        o.get(`/campaigns/${id}/stats`),
      ]);
      for (const res of answers) {
        expect({ id, status: res.status, code: res.body.error?.code }).toEqual({ id, status: 404, code: 'CAMPAIGN_NOT_FOUND' });
      }
    }
    const mine = await api(shared.project).get(`/campaigns/${c.id}`);
    expect(mine.body).toMatchObject({ status: 'DRAFT', name: 'November news' });
  });
});

// Last in the file: whatever the tests above sent, the API never answered a 5xx.
describe('the whole run', () => {
  it('answered no request with a 5xx', () => {
    const requests = stack.logs.filter((l) => l.msg === 'request');
    expect(requests.length).toBeGreaterThan(200);
    // The one deliberate 503 (Temporal unreachable) aside.
    expect(requests.filter((l) => typeof l.status === 'number' && l.status >= 500 && l.status !== 503)).toEqual([]);
  });
});
