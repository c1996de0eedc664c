import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';

let dns: TestDnsServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  stack = await startTestStack({ worker: false, env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' } });
});

afterAll(async () => {
  await stack?.stop();
  await dns?.close();
});

/** Adds `domain` to the project, publishes its DKIM record and verifies it, as an owner would. */
async function verifyDomain(project: TestProject, domain: string) {
  const added = await stack.http.post('/domains', { domain }, { key: project.secretKey });
  expect(added.status).toBe(201);
  const dkim = added.body.records.find((r: any) => r.purpose === 'DKIM');
  dns.setTxt(dkim.name, [dkim.value]);
  const verified = await stack.http.get(`/domains/${added.body.id}/verify`, { key: project.secretKey });
  expect(verified.body.status).toBe('VERIFIED');
  return added.body;
}

/** A project whose example.com is a verified sender domain. */
async function senderProject(): Promise<{ project: TestProject; account: TestAccount }> {
  const { project, account } = await accountWithProject(stack.http);
  await verifyDomain(project, 'example.com');
  return { project, account };
}

const valid = { name: 'Welcome', subject: 'Welcome, {{firstName}}', body: '<p>Hello {{firstName}}</p>', from: 'hello@example.com' };

async function createTemplate(project: TestProject, body: Record<string, unknown> = {}) {
  const res = await stack.http.post('/templates', { ...valid, ...body }, { key: project.secretKey });
  expect(res.status).toBe(201);
  return res.body;
}

const post = (project: TestProject, body: unknown) => stack.http.post('/templates', body, { key: project.secretKey });

describe('POST /templates', () => {
  it('creates a template (201) with MARKETING as the default type, and GET answers the same', async () => {
    const { project } = await senderProject();
    const res = await post(project, { ...valid, from: '  Hello@Example.COM ' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Welcome',
      description: null,
      subject: 'Welcome, {{firstName}}',
      body: '<p>Hello {{firstName}}</p>',
      from: 'hello@example.com',
      fromName: null,
      replyTo: null,
      type: 'MARKETING',
      projectId: project.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    const got = await stack.http.get(`/templates/${res.body.id}`, { key: project.secretKey });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('keeps every optional field and accepts a sender on a subdomain of the verified domain', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project, {
      description: 'Sent after signup.\nKeep it short.',
      from: 'news@mail.example.com',
      fromName: '  Ada at Example ',
      replyTo: 'Support@Example.com',
      type: 'TRANSACTIONAL',
    });
    expect(template).toMatchObject({
      description: 'Sent after signup.\nKeep it short.',
      from: 'news@mail.example.com',
      fromName: 'Ada at Example',
      replyTo: 'support@example.com',
      type: 'TRANSACTIONAL',
    });
  });

  it('stores unicode as sent: accents, CJK and emoji in every text field', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project, {
      name: 'Bienvenue 🎉 欢迎',
      description: 'Ünïcødé ✓',
      subject: 'Grüße, {{name}} 👋',
      body: '<p>こんにちは 🌸</p>',
      fromName: 'Zoë 🚀',
    });
    const got = await stack.http.get(`/templates/${template.id}`, { key: project.secretKey });
    expect(got.body).toMatchObject({
      name: 'Bienvenue 🎉 欢迎',
      description: 'Ünïcødé ✓',
      subject: 'Grüße, {{name}} 👋',
      body: '<p>こんにちは 🌸</p>',
      fromName: 'Zoë 🚀',
    });
  });

  it('stores an internationalised sender domain in punycode, covered by the verified domain in any spelling', async () => {
    const { project } = await accountWithProject(stack.http);
    await verifyDomain(project, 'Bücher.example');
    const template = await createTemplate(project, { from: 'Hallo@BÜCHER.example', replyTo: 'antwort@bücher.example' });
    expect(template).toMatchObject({ from: 'hallo@xn--bcher-kva.example', replyTo: 'antwort@xn--bcher-kva.example' });
    // A non-ASCII local part needs SMTPUTF8, which Mailroom does not send: refused.
    const local = await post(project, { ...valid, from: 'jürgen@bücher.example' });
    expect(local.status).toBe(400);
    expect(local.body.error).toMatch(/^from must be a bare email address/);
  });

  it.each([
    ['name', 'name is required'],
    ['subject', 'subject is required'],
    ['body', 'body is required'],
    ['from', 'from is required'],
  ])('answers a missing %s with the plain 400 body { error }', async (field, message) => {
    const { project } = await senderProject();
    const body: Record<string, unknown> = { ...valid };
    delete body[field];
    const res = await post(project, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it.each([
    ['name', 42, 'name must be a string'],
    ['name', null, 'name must be a string'],
    ['name', '   ', 'name must not be empty'],
    ['name', 'x'.repeat(201), 'name must be at most 200 characters'],
    ['name', 'two\nlines', 'name must not contain line breaks or other control characters'],
    ['subject', '', 'subject must not be empty'],
    ['subject', 'x'.repeat(999), 'subject must be at most 998 characters'],
    ['subject', 'Hello\r\nBcc: victim@example.org', 'subject must not contain line breaks or other control characters'],
    ['subject', 'Hello\nthere', 'subject must not contain line breaks or other control characters'],
    ['subject', ['a'], 'subject must be a string'],
    ['body', '', 'body must not be empty'],
    ['body', ' \n ', 'body must not be empty'],
    ['body', { html: '<p/>' }, 'body must be a string'],
    ['from', 'not-an-address', expect.stringMatching(/^from must be a bare email address/)],
    ['from', 'Ada <hello@example.com>', expect.stringMatching(/^from must be a bare email address .*fromName/)],
    ['from', true, 'from must be a string'],
  ])('answers %s = %j with the plain 400 body naming the problem', async (field, value, message) => {
    const { project } = await senderProject();
    const res = await post(project, { ...valid, [field]: value });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it('accepts a subject of exactly 998 characters and refuses a body over 1,000,000 characters', async () => {
    const { project } = await senderProject();
    await createTemplate(project, { subject: 's'.repeat(998) });
    const tooLong = await post(project, { ...valid, body: 'b'.repeat(1_000_001) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toEqual({ error: 'body must be at most 1000000 characters' });
  });

  it('answers a body that is not a JSON object with the plain 400', async () => {
    const { project } = await senderProject();
    const array = await post(project, [valid]);
    expect(array.status).toBe(400);
    expect(array.body).toEqual({ error: 'The request body must be a JSON object' });
    // A bare JSON string or number is refused by the shared body parser (strict JSON: objects and arrays).
    for (const body of ['template', 42]) {
      const res = await post(project, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST_BODY');
    }
    const empty = await stack.http.post('/templates', undefined, { key: project.secretKey });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ error: 'name is required' });
  });

  it('answers malformed JSON with 400 INVALID_REQUEST_BODY', async () => {
    const { project } = await senderProject();
    const res = await stack.http.request('POST', '/templates', {
      rawBody: '{"name": ',
      headers: { 'Content-Type': 'application/json' },
      key: project.secretKey,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST_BODY');
  });

  it.each([
    ['description', 'd'.repeat(1001), 'too_big'],
    ['description', 7, 'invalid_type'],
    ['fromName', 'Ada\r\nBcc: x@y.z', 'invalid_string'],
    ['fromName', 'n'.repeat(201), 'too_big'],
    ['replyTo', 'nobody', 'invalid_string'],
    ['replyTo', 12, 'invalid_type'],
    ['type', 'marketing', 'invalid_enum_value'],
    ['type', 'NEWSLETTER', 'invalid_enum_value'],
  ])('refuses optional field %s = %j with 422 VALIDATION_ERROR on that field', async (field, value, code) => {
    const { project } = await senderProject();
    const res = await post(project, { ...valid, [field]: value });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_ERROR', message: 'Request validation failed' });
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field, code, message: expect.stringContaining(field) })]);
  });

  it('clears optional fields given as null or an empty string', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project, { description: '', fromName: null, replyTo: '' });
    expect(template).toMatchObject({ description: null, fromName: null, replyTo: null });
  });

  it('refuses a sender whose domain is not verified with 403 INTERNAL_SERVER_ERROR naming the domain', async () => {
    const { project } = await accountWithProject(stack.http);
    const unknown = await post(project, { ...valid, from: 'hello@unverified.example' });
    expect(unknown.status).toBe(403);
    expect(unknown.body.error).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', statusCode: 403, message: expect.stringContaining('unverified.example') });

    // Added but not yet verified: still refused.
    const pending = await stack.http.post('/domains', { domain: 'pending.example' }, { key: project.secretKey });
    expect(pending.status).toBe(201);
    const stillPending = await post(project, { ...valid, from: 'a@pending.example' });
    expect(stillPending.status).toBe(403);
    expect(stillPending.body.error.message).toContain('pending.example');

    // Another project's verified domain does not count for this one.
    await senderProject();
    const others = await post(project, valid);
    expect(others.status).toBe(403);
    expect(others.body.error.message).toContain('example.com');

    const list = await stack.http.get('/templates', { key: project.secretKey });
    expect(list.body.total).toBe(0);
  });

  it('checks the fields before the domain: a malformed request without a verified domain is a 400', async () => {
    const { project } = await accountWithProject(stack.http);
    const res = await post(project, { ...valid, subject: undefined, from: 'a@unverified.example' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'subject is required' });
  });
});

describe('authentication', () => {
  it('needs the secret key: a public key is 401 INVALID_API_KEY, no key 401', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/templates'],
      ['POST', '/templates', valid],
      ['GET', `/templates/${template.id}`],
      ['PATCH', `/templates/${template.id}`, { name: 'x' }],
      ['DELETE', `/templates/${template.id}`],
      ['POST', `/templates/${template.id}/duplicate`],
      ['GET', `/templates/${template.id}/usage`],
    ];
    for (const [method, path, body] of calls) {
      const withPublic = await stack.http.request(method, path, { body, key: project.publicKey });
      expect(withPublic.status).toBe(401);
      expect(withPublic.body.error).toMatchObject({ code: 'INVALID_API_KEY', message: expect.stringContaining('secret key (sk_*)') });
      const withNone = await stack.http.request(method, path, { body });
      expect(withNone.status).toBe(401);
    }
    expect((await stack.http.get(`/templates/${template.id}`, { key: project.secretKey })).status).toBe(200);
  });

  it('answers a method the resource does not have with 405, not a 500', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.put(`/templates/${template.id}`, valid, { key: project.secretKey });
    expect(res.status).toBe(405);
  });

  it('accepts a dashboard session with X-Project-Id', async () => {
    const { project, account } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.get(`/templates/${template.id}`, { cookie: account.cookie, headers: { 'X-Project-Id': project.id } });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(template.id);
  });
});

describe('unknown templates', () => {
  it('answers 404 TEMPLATE_NOT_FOUND for a missing id, a non-uuid id and another project’s template, on every endpoint', async () => {
    const { project } = await senderProject();
    const { project: other } = await senderProject();
    const theirs = await createTemplate(other);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', theirs.id, '%E2%9C%93']) {
      const calls: Array<[string, string, unknown?]> = [
        ['GET', `/templates/${id}`],
        ['PATCH', `/templates/${id}`, { name: 'Mine now' }],
        ['DELETE', `/templates/${id}`],
        ['POST', `/templates/${id}/duplicate`],
        ['GET', `/templates/${id}/usage`],
      ];
      for (const [method, path, body] of calls) {
        const res = await stack.http.request(method, path, { body, key: project.secretKey });
        expect([method, path, res.status]).toEqual([method, path, 404]);
        expect(res.body.error).toMatchObject({ code: 'TEMPLATE_NOT_FOUND', details: { resource: 'template' } });
      }
    }
    // Untouched by the attempts.
    const still = await stack.http.get(`/templates/${theirs.id}`, { key: other.secretKey });
    expect(still.body).toEqual(theirs);
  });
});

describe('PATCH /templates/:id', () => {
  it('changes only the fields given and moves updatedAt', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project, { description: 'first', fromName: 'Ada' });
    const res = await stack.http.patch(`/templates/${template.id}`, { subject: 'New subject', type: 'HEADLESS' }, { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...template, subject: 'New subject', type: 'HEADLESS', updatedAt: expect.any(String) });
    expect(new Date(res.body.updatedAt).getTime()).toBeGreaterThan(new Date(template.updatedAt).getTime());
    expect((await stack.http.get(`/templates/${template.id}`, { key: project.secretKey })).body).toEqual(res.body);
  });

  it('clears optional fields with null or an empty string', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project, { description: 'note', fromName: 'Ada', replyTo: 'r@example.com' });
    const res = await stack.http.patch(`/templates/${template.id}`, { description: null, fromName: '', replyTo: null }, { key: project.secretKey });
    expect(res.body).toMatchObject({ description: null, fromName: null, replyTo: null, name: template.name });
  });

  it('answers an empty body with the template unchanged', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.patch(`/templates/${template.id}`, {}, { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(template);
  });

  it('re-checks the sender domain when from changes', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const refused = await stack.http.patch(`/templates/${template.id}`, { from: 'a@elsewhere.example', name: 'Renamed' }, { key: project.secretKey });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', message: expect.stringContaining('elsewhere.example') });
    expect((await stack.http.get(`/templates/${template.id}`, { key: project.secretKey })).body).toEqual(template);

    await verifyDomain(project, 'elsewhere.example');
    const accepted = await stack.http.patch(`/templates/${template.id}`, { from: 'A@Elsewhere.Example' }, { key: project.secretKey });
    expect(accepted.status).toBe(200);
    expect(accepted.body.from).toBe('a@elsewhere.example');
  });

  it.each([
    ['name', null],
    ['name', ''],
    ['subject', 'a\r\nb'],
    ['subject', 's'.repeat(999)],
    ['body', ''],
    ['from', 'nope'],
    ['from', null],
    ['type', 'OTHER'],
    ['replyTo', 'nope'],
    ['description', 'd'.repeat(1001)],
  ])('refuses %s = %j with 422 on that field and changes nothing', async (field, value) => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.patch(`/templates/${template.id}`, { [field]: value }, { key: project.secretKey });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.errors.map((e: any) => e.field)).toEqual([field]);
    expect((await stack.http.get(`/templates/${template.id}`, { key: project.secretKey })).body).toEqual(template);
  });

  it('refuses a body that is not an object with 422', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.patch(`/templates/${template.id}`, ['name'], { key: project.secretKey });
    expect(res.status).toBe(422);
  });
});

describe('DELETE /templates/:id', () => {
  it('answers 204 with an empty body; the template is gone', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.delete(`/templates/${template.id}`, { key: project.secretKey });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await stack.http.get(`/templates/${template.id}`, { key: project.secretKey })).status).toBe(404);
    expect((await stack.http.delete(`/templates/${template.id}`, { key: project.secretKey })).status).toBe(404);
  });
});

describe('POST /templates/:id/duplicate', () => {
  it('answers 201 { id } of a copy with every field and " (copy)" after the name', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project, { description: 'd', fromName: 'Ada', replyTo: 'r@example.com', type: 'TRANSACTIONAL' });
    const res = await stack.http.post(`/templates/${template.id}/duplicate`, undefined, { key: project.secretKey });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String) });
    expect(res.body.id).not.toBe(template.id);
    const copy = (await stack.http.get(`/templates/${res.body.id}`, { key: project.secretKey })).body;
    expect(copy).toEqual({ ...template, id: res.body.id, name: 'Welcome (copy)', createdAt: expect.any(String), updatedAt: expect.any(String) });
    // The original is untouched.
    expect((await stack.http.get(`/templates/${template.id}`, { key: project.secretKey })).body).toEqual(template);
  });

  it('keeps the copy’s name within 200 characters without cutting an emoji in half', async () => {
    const { project } = await senderProject();
    // 100 emoji are 200 UTF-16 code units, the limit.
    const template = await createTemplate(project, { name: '🎉'.repeat(100) });
    const res = await stack.http.post(`/templates/${template.id}/duplicate`, undefined, { key: project.secretKey });
    const copy = (await stack.http.get(`/templates/${res.body.id}`, { key: project.secretKey })).body;
    expect(copy.name).toBe(`${'🎉'.repeat(96)} (copy)`);
    expect(copy.name.length).toBeLessThanOrEqual(200);
    // And the copy can be copied again and edited with the same rules.
    const again = await stack.http.post(`/templates/${res.body.id}/duplicate`, undefined, { key: project.secretKey });
    expect(again.status).toBe(201);
  });
});

describe('GET /templates/:id/usage', () => {
  it('answers empty campaign and workflow-step lists (neither exists yet)', async () => {
    const { project } = await senderProject();
    const template = await createTemplate(project);
    const res = await stack.http.get(`/templates/${template.id}/usage`, { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ campaigns: [], workflowSteps: [] });
  });
});

describe('GET /templates', () => {
  const list = (project: TestProject, query = '') => stack.http.get(`/templates${query}`, { key: project.secretKey });
  const names = (res: { body: any }) => res.body.data.map((t: any) => t.name);

  async function fivetemplates() {
    const { project } = await senderProject();
    // Created one after another: created_at rises in this order.
    await createTemplate(project, { name: 'banana', subject: 'Fruit news', type: 'MARKETING' });
    await createTemplate(project, { name: 'Apple', subject: 'Your receipt', type: 'TRANSACTIONAL', description: 'order confirmation' });
    await createTemplate(project, { name: 'cherry', subject: 'Password reset', type: 'TRANSACTIONAL' });
    await createTemplate(project, { name: 'Date 100%', subject: 'Discount_code inside', type: 'HEADLESS' });
    await createTemplate(project, { name: 'elderberry', subject: 'Weekly RECEIPT digest', type: 'MARKETING' });
    return project;
  }

  it('answers { data, total, page, pageSize, totalPages }, newest first by default', async () => {
    const project = await fivetemplates();
    const res = await list(project);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: expect.any(Array), total: 5, page: 1, pageSize: 20, totalPages: 1 });
    expect(names(res)).toEqual(['elderberry', 'Date 100%', 'cherry', 'Apple', 'banana']);
    expect(res.body.data[0]).toEqual(expect.objectContaining({ projectId: project.id, from: 'hello@example.com', type: 'MARKETING' }));
  });

  it('pages with page and pageSize; a page past the end is empty', async () => {
    const project = await fivetemplates();
    const first = await list(project, '?pageSize=2');
    expect(first.body).toMatchObject({ total: 5, page: 1, pageSize: 2, totalPages: 3 });
    expect(names(first)).toEqual(['elderberry', 'Date 100%']);
    expect(names(await list(project, '?pageSize=2&page=2'))).toEqual(['cherry', 'Apple']);
    expect(names(await list(project, '?pageSize=2&page=3'))).toEqual(['banana']);
    const past = await list(project, '?pageSize=2&page=4');
    expect(past.body).toEqual({ data: [], total: 5, page: 4, pageSize: 2, totalPages: 3 });
  });

  it('clamps pageSize to 100', async () => {
    const { project } = await senderProject();
    const res = await list(project, '?pageSize=5000');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ pageSize: 100, total: 0, totalPages: 0, data: [] });
  });

  it.each([
    ['page=0', 'page'],
    ['page=-1', 'page'],
    ['page=abc', 'page'],
    ['page=1.5', 'page'],
    ['page=1&page=2', 'page'],
    ['page=99999999999', 'page'],
    ['pageSize=0', 'pageSize'],
    ['pageSize=x', 'pageSize'],
    ['type=marketing', 'type'],
    ['type=NEWSLETTER', 'type'],
    [`search=${'s'.repeat(201)}`, 'search'],
  ])('refuses ?%s with 400 BAD_REQUEST naming the parameter', async (query, field) => {
    const { project } = await senderProject();
    const res = await list(project, `?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.message).toContain(field);
    expect(res.body.error.errors[0].field).toBe(field);
  });

  it('answers odd search bytes with a 4xx or a plain empty page, never a 500', async () => {
    const { project } = await senderProject();
    for (const query of ['search=%ED%A0%80', 'search=%FF', 'search=%00', 'search=%5C%25', 'sort[]=name', 'type[]=MARKETING']) {
      const res = await list(project, `?${query}`);
      expect([query, res.status < 500]).toEqual([query, true]);
    }
  });

  it('filters by type', async () => {
    const project = await fivetemplates();
    const res = await list(project, '?type=TRANSACTIONAL');
    expect(names(res)).toEqual(['cherry', 'Apple']);
    expect(res.body.total).toBe(2);
    expect(names(await list(project, '?type=HEADLESS'))).toEqual(['Date 100%']);
  });

  it('searches name, description and subject case-insensitively, and combines with type and paging', async () => {
    const project = await fivetemplates();
    expect(names(await list(project, '?search=RECEIPT'))).toEqual(['elderberry', 'Apple']);
    expect(names(await list(project, '?search=Confirmation'))).toEqual(['Apple']);
    expect(names(await list(project, '?search=BANANA'))).toEqual(['banana']);
    expect(names(await list(project, '?search=receipt&type=MARKETING'))).toEqual(['elderberry']);
    const paged = await list(project, '?search=e&pageSize=1&page=2');
    expect(paged.body).toMatchObject({ total: 5, totalPages: 5, pageSize: 1, page: 2 });
    expect(names(await list(project, '?search=%20%20'))).toHaveLength(5);
    expect((await list(project, '?search=nothing-like-this')).body).toMatchObject({ data: [], total: 0, totalPages: 0 });
  });

  it('matches %, _ and \\ literally in a search', async () => {
    const project = await fivetemplates();
    expect(names(await list(project, `?search=${encodeURIComponent('100%')}`))).toEqual(['Date 100%']);
    expect(names(await list(project, `?search=${encodeURIComponent('%')}`))).toEqual(['Date 100%']);
    expect(names(await list(project, `?search=${encodeURIComponent('_')}`))).toEqual(['Date 100%']);
    expect(names(await list(project, `?search=${encodeURIComponent('\\')}`))).toEqual([]);
  });

  it('searches unicode', async () => {
    const { project } = await senderProject();
    await createTemplate(project, { name: 'Grüße 🎉' });
    await createTemplate(project, { name: 'Plain' });
    // Case folding beyond ASCII follows the database's locale, so only ASCII case is asserted here.
    expect(names(await list(project, `?search=${encodeURIComponent('GRüße')}`))).toEqual(['Grüße 🎉']);
    expect(names(await list(project, `?search=${encodeURIComponent('grüße')}`))).toEqual(['Grüße 🎉']);
    expect(names(await list(project, `?search=${encodeURIComponent('🎉')}`))).toEqual(['Grüße 🎉']);
  });

  it('sorts by name (ignoring case), createdAt or updatedAt, in either direction; unrecognised values fall back', async () => {
    const project = await fivetemplates();
    expect(names(await list(project, '?sort=name&dir=asc'))).toEqual(['Apple', 'banana', 'cherry', 'Date 100%', 'elderberry']);
    expect(names(await list(project, '?sort=name'))).toEqual(['elderberry', 'Date 100%', 'cherry', 'banana', 'Apple']);
    expect(names(await list(project, '?sort=createdAt&dir=asc'))).toEqual(['banana', 'Apple', 'cherry', 'Date 100%', 'elderberry']);

    const { data } = (await list(project, '?sort=name&dir=asc')).body;
    await stack.http.patch(`/templates/${data[2].id}`, { description: 'touched' }, { key: project.secretKey });
    expect(names(await list(project, '?sort=updatedAt'))[0]).toBe('cherry');
    expect(names(await list(project, '?sort=updatedAt&dir=asc'))[4]).toBe('cherry');

    // Unrecognised sort → createdAt, unrecognised dir → desc.
    expect(names(await list(project, '?sort=subject&dir=sideways'))).toEqual(['elderberry', 'Date 100%', 'cherry', 'Apple', 'banana']);
  });

  it('orders equal sort keys by id, so pages never repeat or skip a template', async () => {
    const { project } = await senderProject();
    for (let i = 0; i < 7; i++) await createTemplate(project, { name: 'Same name' });
    // The same creation moment for all, as templates written in one transaction would have.
    await stack.orm.em
      .fork()
      .execute(`update templates set created_at = '2026-01-01T00:00:00Z', updated_at = '2026-01-01T00:00:00Z' where project_id = ?`, [project.id]);
    for (const query of ['sort=createdAt&dir=desc', 'sort=name&dir=asc', 'sort=updatedAt&dir=asc']) {
      const all = (await list(project, `?${query}&pageSize=100`)).body.data.map((t: any) => t.id);
      const paged: string[] = [];
      for (let page = 1; page <= 4; page++) paged.push(...(await list(project, `?${query}&pageSize=2&page=${page}`)).body.data.map((t: any) => t.id));
      expect(paged).toEqual(all);
      expect(new Set(paged).size).toBe(7);
      const sorted = [...all].sort();
      expect(all).toEqual(query.endsWith('desc') ? sorted.reverse() : sorted);
    }
  });

  it('lists only the key’s project’s templates', async () => {
    const project = await fivetemplates();
    const { project: other } = await senderProject();
    await createTemplate(other, { name: 'theirs' });
    expect((await list(other)).body.total).toBe(1);
    expect(names(await list(project))).not.toContain('theirs');
  });
});

describe('templates that do not compile', () => {
  it("are refused on create and update with 422 naming the field and the renderer's reason; MJML bodies compile", async () => {
    const { project } = await senderProject();
    const broken = await post(project, { ...valid, body: '<p>{{#if vip}}Hello</p>' });
    expect(broken.status).toBe(422);
    expect(broken.body.error.errors).toEqual([expect.objectContaining({ field: 'body', code: 'custom' })]);
    const helper = await post(project, { ...valid, subject: 'Hi {{shout name}}' });
    expect(helper.status).toBe(422);
    expect(helper.body.error.errors[0].field).toBe('subject');

    const mjml = await post(project, {
      ...valid,
      body: '<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{name}}</mj-text></mj-column></mj-section></mj-body></mjml>',
    });
    expect(mjml.status).toBe(201);
    const patched = await stack.http.patch(`/templates/${mjml.body.id}`, { body: '<p>{{/each}}</p>' }, { key: project.secretKey });
    expect(patched.status).toBe(422);
    expect((await stack.http.get(`/templates/${mjml.body.id}`, { key: project.secretKey })).body.body).toContain('<mjml>');
  });
});
