import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { openWithSecret } from '../../lib/crypto';

/**
 * The HTTP API of outbound webhook endpoints and their message log (contract 18). The stack keeps
 * the default address policy (private ranges refused); host names are answered by a test DNS
 * server, and `nowhere.test` names have no address, so nothing here reaches a real receiver.
 * The API reaches Temporal through a proxy one test cuts; the worker and the tests' client do not.
 */
let dns: TestDnsServer;
let proxy: TcpProxy;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  dns.setA('public.example.com', ['93.184.215.14']);
  dns.setA('loopback.example.com', ['127.0.0.1']);
  dns.setA('mixed.example.com', ['93.184.215.14', '10.1.2.3']);
  dns.setAaaa('v6private.example.com', ['fd00::1']);
  proxy = await startTcpProxy(process.env.MAILROOM_TEST_TEMPORAL_ADDRESS!);
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' }, apiEnv: { TEMPORAL_ADDRESS: proxy.address } });
});

afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);
const as = (project: TestProject) => ({ key: project.secretKey });
const url = (path = '') => `https://hooks.nowhere.test/mailroom${path}`;

async function createEndpoint(project: TestProject, body: Record<string, unknown> = {}) {
  const res = await stack.http.post('/webhook-endpoints', { url: url(), events: ['email.*'], ...body }, as(project));
  if (res.status !== 201) throw new Error(`endpoint not created: ${res.status} ${res.text}`);
  return res.body as { id: string; secret: string; secretHint: string };
}

/** A 422 whose items name `field` (and only fields given). */
function expectRefused(res: { status: number; body: any; text: string }, field: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 422, code: 'VALIDATION_ERROR' });
  expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
}

/** Messages of an endpoint written as delivery would leave them, `created_at` spread out. */
async function insertMessages(endpointId: string, projectId: string, rows: Array<{ status: string; createdAt: string; eventType?: string }>) {
  const withIds = rows.map((r) => ({ id: crypto.randomUUID(), event_type: r.eventType ?? 'email.sent', status: r.status, created_at: r.createdAt }));
  await sql(
    `insert into webhook_messages (id, endpoint_id, project_id, event_id, event_type, payload, status, attempt_count, attempts, next_attempt_at, created_at)
     select r.id, ?, ?, gen_random_uuid(), r.event_type, '{}'::jsonb, r.status,
       case when r.status = 'PENDING' then 0 else 1 end,
       case when r.status = 'PENDING' then '[]'::jsonb
         else jsonb_build_array(jsonb_build_object('at', '2026-11-20T10:00:00.000Z', 'statusCode', case when r.status = 'FAILED' then 500 else 200 end,
           'durationMs', 12, 'error', case when r.status = 'FAILED' then 'The receiver answered 500' else null end)) end,
       null, r.created_at
     from jsonb_to_recordset(?::jsonb) as r(id uuid, event_type text, status text, created_at timestamptz)`,
    [endpointId, projectId, JSON.stringify(withIds)],
  );
  return withIds.map((r) => r.id);
}

describe('POST /webhook-endpoints', () => {
  it('answers 201 with the secret (whsec_ + base64 of 24-64 bytes) this once; GET and the list show its hint only', async () => {
    const { project } = await accountWithProject(stack.http);
    const created = await stack.http.post(
      '/webhook-endpoints',
      { url: url('?a=1'), events: ['email.bounced', 'segment.*', 'email.bounced'], description: '  CRM sync  ' },
      as(project),
    );
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: url('?a=1'),
      events: ['email.bounced', 'segment.*'],
      description: 'CRM sync',
      enabled: true,
      disabledReason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+={0,2}$/),
      secretHint: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const { id, secret, secretHint } = created.body;
    const keyBytes = Buffer.from(secret.slice('whsec_'.length), 'base64').length;
    expect(keyBytes).toBeGreaterThanOrEqual(24);
    expect(keyBytes).toBeLessThanOrEqual(64);
    expect(secretHint).toMatch(/^whsec_/);
    expect(secretHint.endsWith(secret.slice(-4))).toBe(true);
    expect(secretHint).not.toContain(secret.slice(6, 20));

    const one = await stack.http.get(`/webhook-endpoints/${id}`, as(project));
    expect(one.status).toBe(200);
    const { secret: _shown, ...withoutSecret } = created.body;
    expect(one.body).toEqual(withoutSecret);
    expect(one.text).not.toContain(secret.slice(6));

    const list = await stack.http.get('/webhook-endpoints', as(project));
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [withoutSecret] });
    expect(list.text).not.toContain(secret.slice(6));

    // Stored sealed, with the endpoint's id as the context.
    const [row] = await sql(`select secret_sealed from webhook_endpoints where id = ?`, [id]);
    expect(row.secret_sealed).not.toContain(secret.slice(6));
    expect(openWithSecret(stack.config.secret, 'webhook-endpoint-secret', id, row.secret_sealed)).toBe(secret);
  });

  it('is created disabled with enabled: false, and answers a dashboard session with X-Project-Id', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const session = { cookie: account.cookie, headers: { 'X-Project-Id': project.id } };
    const created = await stack.http.post('/webhook-endpoints', { url: url(), events: ['*'], enabled: false }, session);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ enabled: false, disabledReason: null, description: null, events: ['*'] });
    expect((await stack.http.get('/webhook-endpoints', session)).body.data).toHaveLength(1);
  });

  it('takes every field at its limit and refuses it past the limit with a 422 naming the field', async () => {
    const { project } = await accountWithProject(stack.http);
    const post = (body: Record<string, unknown>) => stack.http.post('/webhook-endpoints', { url: url(), events: ['email.*'], ...body }, as(project));

    const longUrl = (length: number) => url('/') + 'a'.repeat(length - url('/').length);
    expect((await post({ url: longUrl(2048) })).status).toBe(201);
    expectRefused(await post({ url: longUrl(2049) }), 'url');

    const hundred = Array.from({ length: 100 }, (_, i) => `event.${i}`);
    expect((await post({ events: ['email.sent'] })).status).toBe(201);
    expect((await post({ events: hundred })).body.events).toHaveLength(100);
    expectRefused(await post({ events: [...hundred, 'event.100'] }), 'events');
    expectRefused(await post({ events: [] }), 'events');
    expectRefused(await post({ events: 'email.*' }), 'events');
    expectRefused(await post({ events: undefined }), 'events');
    for (const bad of ['email*', '*.sent', '', '   ', 'email.*.sent', '.*', 'email..*', '**', 'email.\nsent']) {
      expectRefused(await post({ events: ['email.sent', bad] }), 'events.1');
    }
    expectRefused(await post({ events: [42] }), 'events.0');
    expectRefused(await post({ events: ['x'.repeat(201)] }), 'events.0');
    expect((await post({ events: ['x'.repeat(200), 'contact.*', '*'] })).status).toBe(201);

    expect((await post({ description: 'd'.repeat(500) })).body.description).toHaveLength(500);
    expectRefused(await post({ description: 'd'.repeat(501) }), 'description');
    expectRefused(await post({ description: 42 }), 'description');
    expect((await post({ description: '' })).body.description).toBeNull();

    expectRefused(await post({ enabled: 'yes' }), 'enabled');
    expectRefused(await post({ enabled: null }), 'enabled');

    expectRefused(await post({ url: undefined }), 'url');
    expectRefused(await post({ url: 42 }), 'url');
    expectRefused(await post({ url: '' }), 'url');
    expectRefused(await post({ url: 'hooks.nowhere.test/mailroom' }), 'url');
    expectRefused(await post({ url: 'ftp://hooks.nowhere.test/' }), 'url');
    expectRefused(await post({ url: 'https://user:pass@hooks.nowhere.test/' }), 'url');
    expectRefused(await post({ url: 'https://hooks.nowhere.test/a b' }), 'url');
    expectRefused(await post({ url: 'https://hooks.nowhere.test/a\r\nb' }), 'url');
    expectRefused(await post({ url: 'https://hooks.nowhere.test:0/' }), 'url');

    // Unknown fields are dropped, as every request body of the API drops them.
    const extra = await post({ secret: 'whsec_mine', id: crypto.randomUUID() });
    expect(extra.status).toBe(201);
    expect(extra.body.secret).not.toBe('whsec_mine');
  });

  it('refuses loopback, private, link-local and metadata addresses, as literals and after DNS (the default policy)', async () => {
    const { project } = await accountWithProject(stack.http);
    const post = (target: string) => stack.http.post('/webhook-endpoints', { url: target, events: ['*'] }, as(project));
    for (const target of [
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://127.0.0.1:8080/',
      'http://[::1]/',
      'http://[::ffff:192.168.1.1]/',
      'http://100.100.100.200/',
      'http://metadata.google.internal/',
      'http://localhost:3000/',
      'http://api.localhost/',
      'https://loopback.example.com/hook',
      'https://mixed.example.com/hook',
      'https://v6private.example.com/hook',
    ]) {
      const res = await post(target);
      expectRefused(res, 'url');
      expect(res.body.error.errors[0].message).toMatch(/loopback|private|link-local|metadata|unique-local|carrier-grade/);
    }
    const resolved = await post('https://loopback.example.com/hook');
    expect(resolved.body.error.errors[0].message).toContain('loopback.example.com resolves to 127.0.0.1');

    // A public address, and a name with no address yet (checked again on every attempt).
    expect((await post('https://public.example.com/hook')).status).toBe(201);
    expect((await post('https://93.184.215.14/hook')).status).toBe(201);
    expect((await post(url())).status).toBe(201);
    expect((await stack.http.get('/webhook-endpoints', as(project))).body.data).toHaveLength(3);
  });

  it('refuses a 21st endpoint of a project (422); another project still has room', async () => {
    const { project } = await accountWithProject(stack.http);
    await Promise.all(Array.from({ length: 20 }, (_, i) => createEndpoint(project, { description: `n${i}` })));
    const twentyFirst = await stack.http.post('/webhook-endpoints', { url: url(), events: ['*'] }, as(project));
    expect(twentyFirst.status).toBe(422);
    expect(twentyFirst.body.error.errors[0]).toMatchObject({ code: 'too_big', message: expect.stringContaining('at most 20') });
    expect((await stack.http.get('/webhook-endpoints', as(project))).body.data).toHaveLength(20);

    const { project: other } = await accountWithProject(stack.http);
    expect((await stack.http.post('/webhook-endpoints', { url: url(), events: ['*'] }, as(other))).status).toBe(201);
  });
});

describe('access', () => {
  let owner: TestProject;
  let stranger: TestProject;
  let strangerAccount: TestAccount;
  let endpointId: string;
  let messageId: string;

  beforeAll(async () => {
    owner = (await accountWithProject(stack.http)).project;
    ({ project: stranger, account: strangerAccount } = await accountWithProject(stack.http));
    endpointId = (await createEndpoint(owner)).id;
    [messageId] = await insertMessages(endpointId, owner.id, [{ status: 'FAILED', createdAt: '2026-11-20T10:00:00Z' }]);
  });

  const routes = (id: string, message: string = crypto.randomUUID()) =>
    [
      ['GET', `/webhook-endpoints/${id}`],
      ['PATCH', `/webhook-endpoints/${id}`, { enabled: false }],
      ['DELETE', `/webhook-endpoints/${id}`],
      ['POST', `/webhook-endpoints/${id}/rotate-secret`],
      ['POST', `/webhook-endpoints/${id}/test`],
      ['GET', `/webhook-endpoints/${id}/messages`],
      ['POST', `/webhook-endpoints/${id}/messages/${message}/retry`],
    ] as const;

  it('answers 404 for another project’s endpoint on every route (key or session), and changes nothing', async () => {
    for (const [method, path, body] of routes(endpointId, messageId)) {
      const byKey = await stack.http.request(method, path, { ...as(stranger), body });
      expect({ path, method, status: byKey.status, code: byKey.body.error?.code }).toEqual({ path, method, status: 404, code: 'RESOURCE_NOT_FOUND' });
      expect(byKey.body.error.details).toEqual({ resource: 'webhook endpoint', id: endpointId });
      const bySession = await stack.http.request(method, path, { cookie: strangerAccount.cookie, headers: { 'X-Project-Id': stranger.id }, body });
      expect({ path, method, status: bySession.status }).toEqual({ path, method, status: 404 });
    }
    expect((await stack.http.get('/webhook-endpoints', as(stranger))).body.data).toEqual([]);
    const mine = await stack.http.get(`/webhook-endpoints/${endpointId}`, as(owner));
    expect(mine.body).toMatchObject({ enabled: true });
    const [row] = await sql(`select count(*)::int as n from webhook_messages where endpoint_id = ?`, [endpointId]);
    expect(row.n).toBe(1);
    const [message] = await sql(`select status from webhook_messages where id = ?`, [messageId]);
    expect(message.status).toBe('FAILED');
  });

  it('answers 404 for a malformed or unknown id', async () => {
    for (const id of ['not-a-uuid', '123', crypto.randomUUID()]) {
      for (const [method, path, body] of routes(id)) {
        const res = await stack.http.request(method, path, { ...as(owner), body });
        expect({ path, method, status: res.status }).toEqual({ path, method, status: 404 });
      }
    }
  });

  it('answers 401 to a public key and to no key', async () => {
    for (const [method, path, body] of [
      ['GET', '/webhook-endpoints'],
      ['POST', '/webhook-endpoints', { url: url(), events: ['*'] }],
      ...routes(endpointId),
    ] as const) {
      const publicKey = await stack.http.request(method, path, { key: owner.publicKey, body });
      expect({ path, method, status: publicKey.status, code: publicKey.body.error?.code }).toEqual({ path, method, status: 401, code: 'INVALID_API_KEY' });
      const none = await stack.http.request(method, path, { body });
      expect({ path, method, status: none.status }).toEqual({ path, method, status: 401 });
    }
  });
});

describe('PATCH, DELETE and rotate-secret', () => {
  it('PATCH changes the fields given and keeps the others; a refused value changes nothing', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id, secretHint } = await createEndpoint(project, { description: 'first' });
    const before = (await stack.http.get(`/webhook-endpoints/${id}`, as(project))).body;

    const changed = await stack.http.patch(
      `/webhook-endpoints/${id}`,
      { url: 'https://public.example.com/v2', events: ['contact.*', 'email.opened'] },
      as(project),
    );
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({
      ...before,
      url: 'https://public.example.com/v2',
      events: ['contact.*', 'email.opened'],
      secretHint,
      updatedAt: expect.any(String),
    });
    expect(Date.parse(changed.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.updatedAt));

    const cleared = await stack.http.patch(`/webhook-endpoints/${id}`, { description: null }, as(project));
    expect(cleared.body).toMatchObject({ description: null, url: 'https://public.example.com/v2' });

    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { url: 'http://10.0.0.1/' }, as(project)), 'url');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { url: 'https://loopback.example.com/' }, as(project)), 'url');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { events: [] }, as(project)), 'events');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { events: ['*.opened'] }, as(project)), 'events.0');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { description: 'x'.repeat(501) }, as(project)), 'description');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { enabled: 'false' }, as(project)), 'enabled');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, {}, as(project)), '(body)');
    expectRefused(await stack.http.patch(`/webhook-endpoints/${id}`, { secret: 'whsec_x' }, as(project)), '(body)');
    expect((await stack.http.get(`/webhook-endpoints/${id}`, as(project))).body).toEqual(cleared.body);
  });

  it('disabling and re-enabling: enabled: true clears disabledReason and makes what is pending due now', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id } = await createEndpoint(project);

    const disabled = await stack.http.patch(`/webhook-endpoints/${id}`, { enabled: false }, as(project));
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ enabled: false, disabledReason: null });
    // A disabled endpoint gets nothing new, so no test event either.
    const test = await stack.http.post(`/webhook-endpoints/${id}/test`, undefined, as(project));
    expect(test.status).toBe(409);
    expect(test.body.error.code).toBe('CONFLICT');

    // As delivery leaves an endpoint it disabled after days of failures, with a message still pending.
    await sql(`update webhook_endpoints set disabled_reason = 'Every attempt failed for 120 hours', failing_since = now() - interval '6 days' where id = ?`, [
      id,
    ]);
    const [pending] = await insertMessages(id, project.id, [{ status: 'PENDING', createdAt: '2026-11-20T10:00:00Z' }]);
    await sql(`update webhook_messages set next_attempt_at = now() + interval '5 hours' where id = ?`, [pending]);
    expect((await stack.http.get(`/webhook-endpoints/${id}`, as(project))).body).toMatchObject({
      enabled: false,
      disabledReason: 'Every attempt failed for 120 hours',
    });
    const retry = await stack.http.post(`/webhook-endpoints/${id}/messages/${pending}/retry`, undefined, as(project));
    expect(retry.status).toBe(409);

    const enabled = await stack.http.patch(`/webhook-endpoints/${id}`, { enabled: true }, as(project));
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
    const [endpoint] = await sql(`select failing_since from webhook_endpoints where id = ?`, [id]);
    expect(endpoint.failing_since).toBeNull();
    // Due now rather than in 5 hours (or leased for an attempt by the worker since, or attempted already).
    const [message] = await sql(`select status, next_attempt_at < now() + interval '1 hour' as due, attempt_count from webhook_messages where id = ?`, [
      pending,
    ]);
    expect(message.due || message.attempt_count > 0 || message.status !== 'PENDING').toBe(true);

    // Enabling an enabled endpoint changes nothing.
    expect((await stack.http.patch(`/webhook-endpoints/${id}`, { enabled: true }, as(project))).body).toMatchObject({ enabled: true, disabledReason: null });
  });

  it('DELETE answers 204, then the endpoint and its messages are gone (404)', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id } = await createEndpoint(project);
    const keep = await createEndpoint(project);
    await insertMessages(id, project.id, [{ status: 'SUCCEEDED', createdAt: '2026-11-20T10:00:00Z' }]);

    const deleted = await stack.http.delete(`/webhook-endpoints/${id}`, as(project));
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await stack.http.get(`/webhook-endpoints/${id}`, as(project))).status).toBe(404);
    expect((await stack.http.get(`/webhook-endpoints/${id}/messages`, as(project))).status).toBe(404);
    expect((await stack.http.delete(`/webhook-endpoints/${id}`, as(project))).status).toBe(404);
    const [row] = await sql(`select count(*)::int as n from webhook_messages where endpoint_id = ?`, [id]);
    expect(row.n).toBe(0);
    expect((await stack.http.get('/webhook-endpoints', as(project))).body.data.map((e: { id: string }) => e.id)).toEqual([keep.id]);
  });

  it('DELETE and PATCH enabled: false stop the endpoint’s delivery workflow (cancelled through Temporal)', async () => {
    const { project } = await accountWithProject(stack.http);
    const workflowStatus = async (endpointId: string) => (await stack.temporal.workflow.getHandle(`webhook-endpoint-${endpointId}`).describe()).status.name;
    for (const stop of [
      (id: string) => stack.http.delete(`/webhook-endpoints/${id}`, as(project)),
      (id: string) => stack.http.patch(`/webhook-endpoints/${id}`, { enabled: false }, as(project)),
    ]) {
      const { id } = await createEndpoint(project);
      // The test message starts the endpoint's workflow, which then waits for its retry.
      expect((await stack.http.post(`/webhook-endpoints/${id}/test`, undefined, as(project))).status).toBe(202);
      await eventually(async () => expect(await workflowStatus(id)).toBe('RUNNING'));
      expect((await stop(id)).status).toBeLessThan(300);
      // Closed: cancelled, or ended by the run under way when it saw the endpoint gone or disabled; the cancel was asked either way.
      expect(['CANCELLED', 'COMPLETED']).toContain(await eventually(async () => workflowStatus(id).then((status) => status !== 'RUNNING' && status)));
      const history = await stack.temporal.workflow.getHandle(`webhook-endpoint-${id}`).fetchHistory();
      expect(history.events?.some((event) => event.workflowExecutionCancelRequestedEventAttributes)).toBe(true);
    }
    expect(stack.logs.filter((line) => String(line.msg).includes('could not cancel its delivery workflow'))).toEqual([]);
  });

  it('DELETE and PATCH enabled: false still answer while Temporal is unreachable, with a warning (delivery stops by itself)', async () => {
    const { project } = await accountWithProject(stack.http);
    const disabled = await createEndpoint(project);
    const deleted = await createEndpoint(project);
    const warned = (endpointId: string) =>
      stack.logs.some((l) => l.endpointId === endpointId && String(l.msg).includes('could not cancel its delivery workflow'));
    proxy.setMode('refuse');
    try {
      const patch = await stack.http.patch(`/webhook-endpoints/${disabled.id}`, { enabled: false }, as(project));
      expect({ status: patch.status, enabled: patch.body.enabled }).toEqual({ status: 200, enabled: false });
      expect((await stack.http.delete(`/webhook-endpoints/${deleted.id}`, as(project))).status).toBe(204);
    } finally {
      proxy.setMode('pass');
    }
    expect(warned(disabled.id)).toBe(true);
    expect(warned(deleted.id)).toBe(true);
    expect((await stack.http.get(`/webhook-endpoints/${deleted.id}`, as(project))).status).toBe(404);
    expect((await stack.http.get(`/webhook-endpoints/${disabled.id}`, as(project))).body.enabled).toBe(false);
  });

  it('rotate-secret answers a new secret; the one it replaces is kept for 24 hours to sign beside it', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id, secret: first, secretHint: firstHint } = await createEndpoint(project);

    const rotated = await stack.http.post(`/webhook-endpoints/${id}/rotate-secret`, undefined, as(project));
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+={0,2}$/) });
    const second = rotated.body.secret;
    expect(second).not.toBe(first);
    const after = (await stack.http.get(`/webhook-endpoints/${id}`, as(project))).body;
    expect(after.secretHint).not.toBe(firstHint);
    expect(after.secretHint.endsWith(second.slice(-4))).toBe(true);

    const [row] = await sql(
      `select secret_sealed, previous_secret_sealed, extract(epoch from previous_secret_expires_at - now()) as expires_in from webhook_endpoints where id = ?`,
      [id],
    );
    const open = (sealed: string) => openWithSecret(stack.config.secret, 'webhook-endpoint-secret', id, sealed);
    expect(open(row.secret_sealed)).toBe(second);
    expect(open(row.previous_secret_sealed)).toBe(first);
    expect(Number(row.expires_in)).toBeGreaterThan(24 * 3600 - 120);
    expect(Number(row.expires_in)).toBeLessThanOrEqual(24 * 3600 + 5);
  });
});

describe('the test event and the message log', () => {
  it('POST /test answers 202 { messageId }, and the message is in the log as webhook.test', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id } = await createEndpoint(project);
    const test = await stack.http.post(`/webhook-endpoints/${id}/test`, undefined, as(project));
    expect(test.status).toBe(202);
    expect(test.body).toEqual({ messageId: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    const log = await stack.http.get(`/webhook-endpoints/${id}/messages`, as(project));
    expect(log.status).toBe(200);
    expect(log.body).toMatchObject({ cursor: null, hasMore: false });
    expect(log.body.data).toHaveLength(1);
    // Its status and attempts are delivery's (the worker may have tried it already).
    const shown = log.body.data[0];
    expect(shown).toEqual({
      id: test.body.messageId,
      eventType: 'webhook.test',
      eventId: null,
      status: expect.stringMatching(/^(PENDING|SUCCEEDED|FAILED)$/),
      attempts: expect.any(Array),
      nextAttemptAt: shown.nextAttemptAt,
      createdAt: expect.any(String),
    });
    expect(shown.nextAttemptAt !== null).toBe(shown.status === 'PENDING');
    const [row] = await sql(`select payload from webhook_messages where id = ?`, [test.body.messageId]);
    expect(row.payload).toMatchObject({
      type: 'webhook.test',
      source: 'system',
      data: { event: { name: 'webhook.test', data: { endpointId: id } }, contact: null },
    });
  });

  it('pages newest first by keyset, filters by status, and shows each message’s attempts', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id } = await createEndpoint(project);
    const other = await createEndpoint(project);
    const statuses = ['SUCCEEDED', 'FAILED', 'PENDING'] as const;
    const rows = Array.from({ length: 25 }, (_, i) => ({
      status: statuses[i % 3],
      // Ten share one instant: the id orders them.
      createdAt: i < 10 ? '2026-11-20T10:00:00.000001Z' : `2026-11-21T10:00:${String(i).padStart(2, '0')}.5Z`,
    }));
    const ids = await insertMessages(id, project.id, rows);
    await insertMessages(other.id, project.id, [{ status: 'SUCCEEDED', createdAt: '2026-11-22T10:00:00Z' }]);
    const expected = ids
      .map((messageId, i) => ({ messageId, ...rows[i] }))
      .sort((a, b) => (a.createdAt === b.createdAt ? (a.messageId < b.messageId ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1));

    const first = await stack.http.get(`/webhook-endpoints/${id}/messages`, as(project));
    expect(first.body.data).toHaveLength(20);
    expect(first.body.hasMore).toBe(true);
    expect(typeof first.body.cursor).toBe('string');

    const walk = async (query: string) => {
      const seen: Array<{ id: string; status: string }> = [];
      let cursor: string | null = null;
      do {
        const res: any = await stack.http.get(`/webhook-endpoints/${id}/messages?limit=4${query}${cursor ? `&cursor=${cursor}` : ''}`, as(project));
        expect(res.status).toBe(200);
        seen.push(...res.body.data);
        cursor = res.body.cursor;
        expect(res.body.hasMore).toBe(cursor !== null);
      } while (cursor);
      return seen;
    };
    expect((await walk('')).map((m) => m.id)).toEqual(expected.map((m) => m.messageId));
    expect((await walk('&status=FAILED')).map((m) => m.id)).toEqual(expected.filter((m) => m.status === 'FAILED').map((m) => m.messageId));

    const failed = (await walk('&status=FAILED'))[0];
    expect(failed).toEqual({
      id: expect.any(String),
      eventType: 'email.sent',
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'FAILED',
      attempts: [{ at: '2026-11-20T10:00:00.000Z', statusCode: 500, durationMs: 12, error: 'The receiver answered 500' }],
      nextAttemptAt: null,
      createdAt: expect.any(String),
    });

    expect((await stack.http.get(`/webhook-endpoints/${id}/messages?status=LOST`, as(project))).status).toBe(400);
    expect((await stack.http.get(`/webhook-endpoints/${id}/messages?cursor=garbage`, as(project))).status).toBe(400);
    expect((await stack.http.get(`/webhook-endpoints/${id}/messages?limit=0`, as(project))).status).toBe(400);
  });

  it('retry answers 202 and makes the message due again; an unknown or malformed message id is 404', async () => {
    const { project } = await accountWithProject(stack.http);
    const { id } = await createEndpoint(project);
    const other = await createEndpoint(project);
    const [failed] = await insertMessages(id, project.id, [{ status: 'FAILED', createdAt: '2026-11-20T10:00:00Z' }]);
    const [elsewhere] = await insertMessages(other.id, project.id, [{ status: 'FAILED', createdAt: '2026-11-20T10:00:00Z' }]);

    const retried = await stack.http.post(`/webhook-endpoints/${id}/messages/${failed}/retry`, undefined, as(project));
    expect(retried.status).toBe(202);
    expect(retried.body).toEqual({ messageId: failed });
    // PENDING and due, unless the worker has already made its next attempt.
    await eventually(async () => {
      const [row] = await sql(`select status, attempt_count from webhook_messages where id = ?`, [failed]);
      return row.status === 'PENDING' || row.attempt_count > 1;
    });

    for (const messageId of [crypto.randomUUID(), 'nope', elsewhere]) {
      const res = await stack.http.post(`/webhook-endpoints/${id}/messages/${messageId}/retry`, undefined, as(project));
      expect({ messageId, status: res.status }).toEqual({ messageId, status: 404 });
    }
    const [untouched] = await sql(`select status from webhook_messages where id = ?`, [elsewhere]);
    expect(untouched.status).toBe('FAILED');
  });
});
