import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestProject } from '../support/accounts';
import { graphProblems, nextStepId, runProblems, type GraphStep, type GraphTransition } from '../../services/automation/automationGraph';

let dns: TestDnsServer;
let stack: TestStack;
/** A project with a verified domain and a template, shared by tests that need nothing else. */
let shared: { project: TestProject; domain: string; templateId: string };
/** A second project: its ids must be invisible to the first. */
let other: { project: TestProject; domain: string; templateId: string };

async function sendingProject() {
  const { project, domain } = await projectWithVerifiedDomain(stack, dns);
  const template = await stack.http.post(
    '/templates',
    { name: 'Welcome', subject: 'Hi {{firstName}}', body: '<p>Hello {{firstName}}</p>', from: `hello@${domain}` },
    { key: project.secretKey },
  );
  expect(template.status).toBe(201);
  return { project, domain, templateId: template.body.id as string };
}

beforeAll(async () => {
  dns = await startTestDnsServer();
  stack = await startTestStack({ worker: false, env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' } });
  shared = await sendingProject();
  other = await sendingProject();
});

afterAll(async () => {
  await stack?.stop();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

const as = (project: TestProject) => ({
  get: (path: string) => stack.http.get(path, { key: project.secretKey }),
  post: (path: string, body?: unknown) => stack.http.post(path, body, { key: project.secretKey }),
  patch: (path: string, body?: unknown) => stack.http.patch(path, body, { key: project.secretKey }),
  del: (path: string) => stack.http.delete(path, { key: project.secretKey }),
  raw: (method: string, path: string, rawBody: string) =>
    stack.http.request(method, path, { rawBody, key: project.secretKey, headers: { 'Content-Type': 'application/json' } }),
});

async function createWorkflow(project: TestProject = shared.project, body: Record<string, unknown> = {}) {
  const res = await as(project).post('/workflows', { name: 'Onboarding', eventName: 'signed_up', ...body });
  expect(res.status).toBe(201);
  return res.body as { id: string; steps: Array<{ id: string; type: string }>; [key: string]: any };
}

const triggerOf = (workflow: { steps: Array<{ id: string; type: string }> }) => workflow.steps.find((s) => s.type === 'TRIGGER')!.id;

async function addStep(workflowId: string, type: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}, project = shared.project) {
  const res = await as(project).post(`/workflows/${workflowId}/steps`, { type, config, ...extra });
  if (res.status !== 201) throw new Error(`adding ${type} answered ${res.status}: ${res.text}`);
  return res.body as { id: string; type: string; config: Record<string, any>; [key: string]: any };
}

async function connect(workflowId: string, fromStepId: string, toStepId: string, labels: Record<string, unknown> = {}, project = shared.project) {
  const res = await as(project).post(`/workflows/${workflowId}/transitions`, { fromStepId, toStepId, ...labels });
  if (res.status !== 201) throw new Error(`connecting answered ${res.status}: ${res.text}`);
  return res.body as { id: string; fromStepId: string; toStepId: string; branch: string | null; waitOutcome: string | null };
}

const stepBody = (workflowId: string, body: unknown) => as(shared.project).post(`/workflows/${workflowId}/steps`, body);
const fieldsOf = (res: { body: any }) => (res.body.error?.errors ?? []).map((e: { field: string }) => e.field);
const problemKinds = (res: { body: any }) => (res.body.error?.details?.problems ?? []).map((p: { kind: string }) => p.kind).sort();

const delay = { amount: 1, unit: 'hours' };

describe('POST /workflows and GET /workflows/:id', () => {
  it('creates a disabled EVENT workflow with its TRIGGER step (201), and GET answers the same', async () => {
    const res = await as(shared.project).post('/workflows', { name: '  Onboarding ✨ ', description: 'Welcome series\nfor new users', eventName: 'signed_up' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Onboarding ✨',
      description: 'Welcome series\nfor new users',
      triggerType: 'EVENT',
      triggerConfig: { eventName: 'signed_up' },
      enabled: false,
      allowReentry: false,
      firstExecutionAt: null,
      projectId: shared.project.id,
      steps: [
        {
          id: expect.any(String),
          type: 'TRIGGER',
          name: 'Trigger',
          position: { x: 0, y: 0 },
          config: {},
          templateId: null,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ],
      transitions: [],
      problems: [expect.objectContaining({ kind: 'empty_workflow' })],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const got = await as(shared.project).get(`/workflows/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('takes allowReentry and the events Mailroom emits itself as triggers', async () => {
    const w = await createWorkflow(shared.project, { eventName: 'contact.subscribed', allowReentry: true });
    expect(w).toMatchObject({ triggerConfig: { eventName: 'contact.subscribed' }, allowReentry: true, enabled: false });
    const segment = await createWorkflow(shared.project, { eventName: 'segment.vip.entry' });
    expect(segment.triggerConfig.eventName).toBe('segment.vip.entry');
  });

  it.each([
    ['name', { eventName: 'x' }],
    ['name', { name: '', eventName: 'x' }],
    ['name', { name: 'a\r\nb', eventName: 'x' }],
    ['name', { name: 'a'.repeat(201), eventName: 'x' }],
    ['name', { name: 42, eventName: 'x' }],
    ['eventName', { name: 'ok' }],
    ['eventName', { name: 'ok', eventName: '   ' }],
    ['eventName', { name: 'ok', eventName: 'a\nb' }],
    ['eventName', { name: 'ok', eventName: 'e'.repeat(201) }],
    ['eventName', { name: 'ok', eventName: ['x'] }],
    ['allowReentry', { name: 'ok', eventName: 'x', allowReentry: 'yes' }],
    ['description', { name: 'ok', eventName: 'x', description: 'd'.repeat(1001) }],
  ])('refuses a bad %s with 422 naming it (case %#)', async (field, body) => {
    const res = await as(shared.project).post('/workflows', body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res)).toContain(field);
  });

  it('ignores triggerType and enabled on create: always EVENT and disabled', async () => {
    const w = await createWorkflow(shared.project, { triggerType: 'SCHEDULE', enabled: true });
    expect(w).toMatchObject({ triggerType: 'EVENT', enabled: false });
  });

  it('answers 400 for malformed JSON and 401 without the secret key', async () => {
    const bad = await as(shared.project).raw('POST', '/workflows', '{"name":');
    expect(bad.status).toBe(400);
    expect((await stack.http.get('/workflows')).status).toBe(401);
    const publicKey = await stack.http.get('/workflows', { key: shared.project.publicKey });
    expect(publicKey.status).toBe(401);
    expect(publicKey.body.error.code).toBe('INVALID_API_KEY');
  });

  it('answers 404 WORKFLOW_NOT_FOUND for unknown and malformed ids', async () => {
    for (const id of ['00000000-0000-0000-0000-000000000000', 'nope', '%E2%9C%A8']) {
      const res = await as(shared.project).get(`/workflows/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('WORKFLOW_NOT_FOUND');
    }
  });
});

describe('POST /workflows/:id/steps: every kind of step config', () => {
  let workflowId: string;
  beforeAll(async () => {
    workflowId = (await createWorkflow()).id;
  });

  it('SEND_EMAIL: a template of the project, sent to the contact by default or to a custom address', async () => {
    const step = await addStep(
      workflowId,
      'SEND_EMAIL',
      { templateId: shared.templateId.toUpperCase() },
      { name: 'Welcome mail', position: { x: 120.5, y: -40 } },
    );
    expect(step).toEqual({
      id: expect.any(String),
      type: 'SEND_EMAIL',
      name: 'Welcome mail',
      position: { x: 120.5, y: -40 },
      config: { templateId: shared.templateId, recipient: { type: 'CONTACT' } },
      templateId: shared.templateId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const custom = await addStep(
      workflowId,
      'SEND_EMAIL',
      { recipient: { type: 'CUSTOM', customEmail: ' Boss@Example.COM ' } },
      { templateId: shared.templateId },
    );
    expect(custom.config).toEqual({ templateId: shared.templateId, recipient: { type: 'CUSTOM', customEmail: 'boss@example.com' } });
    expect(custom.name).toBe('Send email');
  });

  it.each([
    ['config.templateId', {}],
    ['config.templateId', { templateId: 'not-a-uuid' }],
    ['config.templateId', { templateId: '00000000-0000-4000-8000-000000000000' }],
    ['config.recipient.customEmail', { recipient: { type: 'CUSTOM' } }],
    ['config.recipient.customEmail', { recipient: { type: 'CUSTOM', customEmail: 'not an email' } }],
    ['config.recipient.customEmail', { recipient: { type: 'CUSTOM', customEmail: 'a@b.co\r\nBcc: x@y.z' } }],
    ['config.recipient.customEmail', { recipient: { type: 'CONTACT', customEmail: 'a@example.com' } }],
    ['config.recipient.type', { recipient: { type: 'EVERYONE' } }],
    ['config.recipient', { recipient: 'CONTACT' }],
  ])('SEND_EMAIL refuses a bad %s (case %#)', async (field, config) => {
    const withTemplate = 'templateId' in config || field === 'config.templateId' ? config : { templateId: shared.templateId, ...config };
    const res = await stepBody(workflowId, { type: 'SEND_EMAIL', config: withTemplate });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it("SEND_EMAIL refuses another project's template as if it did not exist", async () => {
    const res = await stepBody(workflowId, { type: 'SEND_EMAIL', config: { templateId: other.templateId } });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toEqual(['config.templateId']);
    expect(res.body.error.errors[0].message).toMatch(/Template not found/);
  });

  it('SEND_EMAIL refuses templateId and config.templateId that disagree', async () => {
    const res = await stepBody(workflowId, { type: 'SEND_EMAIL', templateId: shared.templateId, config: { templateId: other.templateId } });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toEqual(['templateId']);
  });

  it('DELAY: fractions of a minute, up to 365 days in all', async () => {
    expect((await addStep(workflowId, 'DELAY', { amount: 0.1, unit: 'minutes' })).config).toEqual({ amount: 0.1, unit: 'minutes' });
    expect((await addStep(workflowId, 'DELAY', { amount: 365, unit: 'days' })).config).toEqual({ amount: 365, unit: 'days' });
    expect((await addStep(workflowId, 'DELAY', { amount: 8760, unit: 'hours' })).config).toEqual({ amount: 8760, unit: 'hours' });
  });

  it.each([
    ['config.amount', { amount: 0, unit: 'minutes' }],
    ['config.amount', { amount: -1, unit: 'minutes' }],
    ['config.amount', { amount: '5', unit: 'minutes' }],
    ['config.amount', { unit: 'minutes' }],
    ['config.amount', { amount: 365.01, unit: 'days' }],
    ['config.amount', { amount: 525_601, unit: 'minutes' }],
    ['config.unit', { amount: 1, unit: 'weeks' }],
    ['config.unit', { amount: 1 }],
    ['config', 'one hour'],
  ])('DELAY refuses a bad %s (case %#)', async (field, config) => {
    const res = await stepBody(workflowId, { type: 'DELAY', config });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('DELAY refuses an amount that JSON reads as infinite', async () => {
    const res = await as(shared.project).raw('POST', `/workflows/${workflowId}/steps`, '{"type":"DELAY","config":{"amount":1e400,"unit":"minutes"}}');
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain('config.amount');
  });

  it('WAIT_FOR_EVENT: an event name (unicode too), with or without a timeout in seconds', async () => {
    expect((await addStep(workflowId, 'WAIT_FOR_EVENT', { eventName: ' purchase ' })).config).toEqual({ eventName: 'purchase' });
    expect((await addStep(workflowId, 'WAIT_FOR_EVENT', { eventName: 'email.opened', timeout: 3600 })).config).toEqual({
      eventName: 'email.opened',
      timeout: 3600,
    });
    expect((await addStep(workflowId, 'WAIT_FOR_EVENT', { eventName: 'bestellung_bestätigt 🎉', timeout: null })).config).toEqual({
      eventName: 'bestellung_bestätigt 🎉',
    });
  });

  it.each([
    ['config.eventName', {}],
    ['config.eventName', { eventName: '' }],
    ['config.eventName', { eventName: 'a\r\nb' }],
    ['config.eventName', { eventName: 'e'.repeat(201) }],
    ['config.eventName', { eventName: 7 }],
    ['config.timeout', { eventName: 'x', timeout: 0 }],
    ['config.timeout', { eventName: 'x', timeout: -5 }],
    ['config.timeout', { eventName: 'x', timeout: '60' }],
    ['config.timeout', { eventName: 'x', timeout: 365 * 86_400 + 1 }],
  ])('WAIT_FOR_EVENT refuses a bad %s (case %#)', async (field, config) => {
    const res = await stepBody(workflowId, { type: 'WAIT_FOR_EVENT', config });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('CONDITION: contact fields, contact data and event data, with the filter operators', async () => {
    const accepted = [
      { field: 'data.plan', operator: 'equals', value: 'pro' },
      { field: 'contact.data.address.city', operator: 'contains', value: 'Zürich' },
      { field: 'contact.email', operator: 'contains', value: '@example.com' },
      { field: 'contact.subscribed', operator: 'equals', value: true },
      { field: 'contact.createdAt', operator: 'within', value: 7, unit: 'days' },
      { field: 'event.amount', operator: 'greaterThan', value: 10 },
      { field: 'event.coupon', operator: 'exists' },
      { field: 'data.vip', operator: 'equals', value: null },
    ];
    for (const config of accepted) expect((await addStep(workflowId, 'CONDITION', config)).config).toEqual(config);
  });

  it.each([
    ['config.field', { field: 'plan', operator: 'equals', value: 'x' }],
    ['config.field', { field: 'contact.phone', operator: 'equals', value: 'x' }],
    ['config.field', { field: 'event.', operator: 'exists' }],
    ['config.field', { field: 'segment.00000000-0000-4000-8000-000000000000', operator: 'equals', value: 'x' }],
    ['config.field', { operator: 'equals', value: 'x' }],
    ['config.operator', { field: 'data.plan', operator: 'triggered' }],
    ['config.operator', { field: 'data.plan', operator: 'like', value: 'x' }],
    ['config.operator', { field: 'contact.subscribed', operator: 'greaterThan', value: 1 }],
    ['config.value', { field: 'contact.subscribed', operator: 'equals', value: 'maybe' }],
    ['config.value', { field: 'contact.createdAt', operator: 'equals', value: 'yesterday' }],
    ['config.value', { field: 'data.plan', operator: 'equals' }],
    ['config.value', { field: 'data.plan', operator: 'contains', value: 'x'.repeat(1001) }],
    ['config.value', { field: 'data.plan', operator: 'contains', value: { a: 1 } }],
    ['config.unit', { field: 'contact.createdAt', operator: 'within', value: 7 }],
    ['config.unit', { field: 'contact.createdAt', operator: 'olderThan', value: 7, unit: 'fortnights' }],
  ])('CONDITION refuses a bad %s (case %#)', async (field, config) => {
    const res = await stepBody(workflowId, { type: 'CONDITION', config });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('WEBHOOK: http(s) URLs with placeholders, a method, headers and a body', async () => {
    const step = await addStep(workflowId, 'WEBHOOK', {
      url: 'https://hooks.example.com/users/{{contact.id}}?src=mailroom',
      method: 'put',
      headers: { Authorization: 'Bearer {{data.token}}', 'X-Trace': 'ü' },
      body: { user: '{{contact.email}}', tags: ['a', 'b'] },
    });
    expect(step.config).toEqual({
      url: 'https://hooks.example.com/users/{{contact.id}}?src=mailroom',
      method: 'PUT',
      headers: { Authorization: 'Bearer {{data.token}}', 'X-Trace': 'ü' },
      body: { user: '{{contact.email}}', tags: ['a', 'b'] },
    });
    expect((await addStep(workflowId, 'WEBHOOK', { url: 'http://localhost:9000/hook' })).config).toEqual({ url: 'http://localhost:9000/hook', method: 'POST' });
    expect((await addStep(workflowId, 'WEBHOOK', { url: 'https://x.example/{{data.path}}', body: 'plain {{contact.email}}' })).config.body).toBe(
      'plain {{contact.email}}',
    );
  });

  it.each([
    ['config.url', {}],
    ['config.url', { url: 'ftp://example.com/file' }],
    ['config.url', { url: 'javascript:alert(1)' }],
    ['config.url', { url: 'https://exa mple.com' }],
    ['config.url', { url: 'https://example.com/\r\nHost: evil' }],
    ['config.url', { url: 'https://' }],
    ['config.url', { url: `https://example.com/${'a'.repeat(2048)}` }],
    ['config.method', { url: 'https://example.com', method: 'TRACE' }],
    ['config.method', { url: 'https://example.com', method: 5 }],
    ['config.headers.X-Evil', { url: 'https://example.com', headers: { 'X-Evil': 'a\r\nSet-Cookie: b' } }],
    ['config.headers.X-Evil', { url: 'https://example.com', headers: { 'X-Evil': 'a\nb' } }],
    ['config.headers.Bad: name', { url: 'https://example.com', headers: { 'Bad: name': 'x' } }],
    ['config.headers.Host', { url: 'https://example.com', headers: { Host: 'evil.example' } }],
    ['config.headers.x-mailroom-signature', { url: 'https://example.com', headers: { 'x-mailroom-signature': 'forged' } }],
    ['config.headers.X-Long', { url: 'https://example.com', headers: { 'X-Long': 'v'.repeat(999) } }],
    ['config.headers.X-Num', { url: 'https://example.com', headers: { 'X-Num': 5 } }],
    ['config.headers', { url: 'https://example.com', headers: ['X: y'] }],
    ['config.body', { url: 'https://example.com', method: 'GET', body: { a: 1 } }],
    ['config.body', { url: 'https://example.com', body: 42 }],
    ['config.body', { url: 'https://example.com', body: 'x'.repeat(64 * 1024 + 1) }],
  ])('WEBHOOK refuses a bad %s (case %#)', async (field, config) => {
    const res = await stepBody(workflowId, { type: 'WEBHOOK', config });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('UPDATE_CONTACT: updates under the contact data rules (reserved keys dropped) and a subscription action', async () => {
    const step = await addStep(workflowId, 'UPDATE_CONTACT', {
      updates: { plan: 'pro', score: 3, nested: { a: 1 }, gone: null, email: 'hijack@example.com', mailroom_id: 'x', straße: 'ok' },
      subscriptionAction: 'unsubscribe',
    });
    expect(step.config).toEqual({ updates: { plan: 'pro', score: 3, nested: { a: 1 }, gone: null, straße: 'ok' }, subscriptionAction: 'unsubscribe' });
    expect((await addStep(workflowId, 'UPDATE_CONTACT', {})).config).toEqual({ updates: {}, subscriptionAction: 'none' });
  });

  it.each([
    ['config.subscriptionAction', { subscriptionAction: 'maybe' }],
    ['config.updates', { updates: 'plan=pro' }],
    ['config.updates', { updates: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) }],
    ['config.updates', { updates: { big: 'x'.repeat(70 * 1024) } }],
    [`config.updates.${'k'.repeat(40)}`, { updates: { ['k'.repeat(101)]: 1 } }],
  ])('UPDATE_CONTACT refuses a bad %s (case %#)', async (field, config) => {
    const res = await stepBody(workflowId, { type: 'UPDATE_CONTACT', config });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('UPDATE_CONTACT: text PostgreSQL cannot store is refused before it reaches the step (400 from the body reader)', async () => {
    const res = await stepBody(workflowId, { type: 'UPDATE_CONTACT', config: { updates: { bad: 'lone \ud800 surrogate' } } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/config\.updates\.bad/);
  });

  it('EXIT: an optional one-line reason', async () => {
    expect((await addStep(workflowId, 'EXIT', { reason: ' Bought already ✓ ' })).config).toEqual({ reason: 'Bought already ✓' });
    expect((await addStep(workflowId, 'EXIT', {})).config).toEqual({});
    expect((await addStep(workflowId, 'EXIT', { reason: null })).config).toEqual({});
  });

  it.each([
    ['config.reason', { reason: 'a\r\nb' }],
    ['config.reason', { reason: 'r'.repeat(501) }],
    ['config.reason', { reason: 5 }],
  ])('EXIT refuses a bad %s (case %#)', async (field, config) => {
    const res = await stepBody(workflowId, { type: 'EXIT', config });
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it.each([
    ['type', { config: {} }],
    ['type', { type: 'TRIGGER', config: {} }],
    ['type', { type: 'SMS', config: {} }],
    ['type', { type: 'delay', config: delay }],
    ['name', { type: 'DELAY', name: 'a\nb', config: delay }],
    ['name', { type: 'DELAY', name: 'n'.repeat(201), config: delay }],
    ['position.x', { type: 'DELAY', position: { x: 'left', y: 0 }, config: delay }],
    ['position.y', { type: 'DELAY', position: { x: 0 }, config: delay }],
    ['position.x', { type: 'DELAY', position: { x: 1e12, y: 0 }, config: delay }],
    ['config', { type: 'DELAY', config: [1, 'hours'] }],
    ['templateId', { type: 'DELAY', templateId: '00000000-0000-4000-8000-000000000000', config: delay }],
  ])('refuses a bad step %s (case %#)', async (field, body) => {
    const res = await stepBody(workflowId, body);
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('holds at most 500 steps per workflow (422 beyond)', async () => {
    const w = await createWorkflow();
    await sql(`insert into workflow_steps (workflow_id, type, name, config) select ?, 'EXIT', 'x', '{}'::jsonb from generate_series(1, 498)`, [w.id]);
    expect((await stepBody(w.id, { type: 'EXIT', config: {} })).status).toBe(201);
    const res = await stepBody(w.id, { type: 'EXIT', config: {} });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ code: 'too_big', message: expect.stringMatching(/at most 500 steps/) });
  });

  it('names why a TRIGGER step cannot be added', async () => {
    const res = await stepBody(workflowId, { type: 'TRIGGER', config: {} });
    expect(res.body.error.errors[0].message).toMatch(/exactly one TRIGGER/);
  });
});

describe('PATCH /workflows/:id/steps/:stepId', () => {
  it('renames, moves and replaces the config, checked against the step kind', async () => {
    const w = await createWorkflow();
    const step = await addStep(w.id, 'DELAY', delay);
    const res = await as(shared.project).patch(`/workflows/${w.id}/steps/${step.id}`, {
      name: 'Wait a bit',
      position: { x: 5, y: 6 },
      config: { amount: 2.5, unit: 'days' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: step.id, type: 'DELAY', name: 'Wait a bit', position: { x: 5, y: 6 }, config: { amount: 2.5, unit: 'days' } });
    const bad = await as(shared.project).patch(`/workflows/${w.id}/steps/${step.id}`, { config: { amount: 400, unit: 'days' } });
    expect(bad.status).toBe(422);
    expect(fieldsOf(bad)).toEqual(['config.amount']);
    const typeChange = await as(shared.project).patch(`/workflows/${w.id}/steps/${step.id}`, { type: 'EXIT' });
    expect(typeChange.status).toBe(422);
    expect(fieldsOf(typeChange)).toEqual(['type']);
    const got = await as(shared.project).get(`/workflows/${w.id}`);
    expect(got.body.steps.find((s: { id: string }) => s.id === step.id).config).toEqual({ amount: 2.5, unit: 'days' });
  });

  it("changes a SEND_EMAIL step's template by templateId alone, keeping its recipient; another project's template is refused", async () => {
    const w = await createWorkflow();
    const second = await as(shared.project).post('/templates', { name: 'Second', subject: 'S', body: '<p>b</p>', from: `hello@${shared.domain}` });
    const step = await addStep(w.id, 'SEND_EMAIL', { templateId: shared.templateId, recipient: { type: 'CUSTOM', customEmail: 'boss@example.com' } });
    const res = await as(shared.project).patch(`/workflows/${w.id}/steps/${step.id}`, { templateId: second.body.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      templateId: second.body.id,
      config: { templateId: second.body.id, recipient: { type: 'CUSTOM', customEmail: 'boss@example.com' } },
    });
    const foreign = await as(shared.project).patch(`/workflows/${w.id}/steps/${step.id}`, { config: { templateId: other.templateId } });
    expect(foreign.status).toBe(422);
    expect(fieldsOf(foreign)).toEqual(['config.templateId']);
  });

  it('lets the TRIGGER step be renamed and moved, not configured', async () => {
    const w = await createWorkflow();
    const moved = await as(shared.project).patch(`/workflows/${w.id}/steps/${triggerOf(w)}`, { name: 'Signed up', position: { x: 1, y: 2 } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ type: 'TRIGGER', name: 'Signed up', position: { x: 1, y: 2 }, config: {} });
    const configured = await as(shared.project).patch(`/workflows/${w.id}/steps/${triggerOf(w)}`, { config: { eventName: 'other' } });
    expect(configured.status).toBe(422);
  });

  it('answers 404 for a step of another workflow, an unknown step and a malformed id', async () => {
    const a = await createWorkflow();
    const b = await createWorkflow();
    const stepOfB = await addStep(b.id, 'DELAY', delay);
    for (const stepId of [stepOfB.id, '00000000-0000-4000-8000-000000000000', 'x']) {
      expect((await as(shared.project).patch(`/workflows/${a.id}/steps/${stepId}`, { name: 'n' })).status).toBe(404);
      expect((await as(shared.project).del(`/workflows/${a.id}/steps/${stepId}`)).status).toBe(404);
    }
  });
});

describe('POST and DELETE /workflows/:id/transitions', () => {
  it('connects steps: plain steps without labels, CONDITION with a branch, WAIT_FOR_EVENT with an outcome (EVENT by default)', async () => {
    const w = await createWorkflow();
    const wait = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: 60 });
    const condition = await addStep(w.id, 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' });
    const exit = await addStep(w.id, 'EXIT', {});
    const mail = await addStep(w.id, 'SEND_EMAIL', { templateId: shared.templateId });
    const first = await connect(w.id, triggerOf(w), wait.id);
    expect(first).toEqual({
      id: expect.any(String),
      fromStepId: triggerOf(w),
      toStepId: wait.id,
      branch: null,
      waitOutcome: null,
      createdAt: expect.any(String),
    });
    expect((await connect(w.id, wait.id, condition.id)).waitOutcome).toBe('EVENT');
    expect((await connect(w.id, wait.id, exit.id, { waitOutcome: 'TIMEOUT' })).waitOutcome).toBe('TIMEOUT');
    expect((await connect(w.id, condition.id, mail.id, { branch: 'yes' })).branch).toBe('yes');
    expect((await connect(w.id, condition.id, exit.id, { branch: 'no', waitOutcome: null })).branch).toBe('no');
    const got = await as(shared.project).get(`/workflows/${w.id}`);
    expect(got.body.transitions).toHaveLength(5);
    expect(got.body.problems).toEqual([]);
  });

  it('refuses labels that do not fit the source step, edges into the TRIGGER, out of EXIT and to itself (422)', async () => {
    const w = await createWorkflow();
    const condition = await addStep(w.id, 'CONDITION', { field: 'data.plan', operator: 'exists' });
    const wait = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'x' });
    const d = await addStep(w.id, 'DELAY', delay);
    const exit = await addStep(w.id, 'EXIT', {});
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ fromStepId: condition.id, toStepId: d.id }, 'branch'],
      [{ fromStepId: condition.id, toStepId: d.id, branch: 'maybe' }, 'branch'],
      [{ fromStepId: condition.id, toStepId: d.id, branch: 'yes', waitOutcome: 'EVENT' }, 'waitOutcome'],
      [{ fromStepId: wait.id, toStepId: d.id, branch: 'yes' }, 'branch'],
      [{ fromStepId: wait.id, toStepId: d.id, waitOutcome: 'LATER' }, 'waitOutcome'],
      [{ fromStepId: d.id, toStepId: exit.id, branch: 'no' }, 'branch'],
      [{ fromStepId: triggerOf(w), toStepId: d.id, waitOutcome: 'EVENT' }, 'waitOutcome'],
      [{ fromStepId: d.id, toStepId: triggerOf(w) }, 'toStepId'],
      [{ fromStepId: exit.id, toStepId: d.id }, 'fromStepId'],
      [{ fromStepId: d.id, toStepId: d.id }, 'toStepId'],
      [{ fromStepId: 'nope', toStepId: d.id }, 'fromStepId'],
      [{ toStepId: d.id }, 'fromStepId'],
    ];
    for (const [body, field] of cases) {
      const res = await as(shared.project).post(`/workflows/${w.id}/transitions`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(fieldsOf(res)).toContain(field);
    }
  });

  it('refuses a second way out for the same label with 409, and steps of another workflow with 404', async () => {
    const w = await createWorkflow();
    const a = await addStep(w.id, 'DELAY', delay);
    const b = await addStep(w.id, 'EXIT', {});
    const condition = await addStep(w.id, 'CONDITION', { field: 'data.plan', operator: 'exists' });
    await connect(w.id, a.id, b.id);
    const again = await as(shared.project).post(`/workflows/${w.id}/transitions`, { fromStepId: a.id, toStepId: b.id });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const elsewhere = await as(shared.project).post(`/workflows/${w.id}/transitions`, { fromStepId: a.id, toStepId: condition.id });
    expect(elsewhere.status).toBe(409);
    await connect(w.id, condition.id, b.id, { branch: 'yes' });
    expect((await as(shared.project).post(`/workflows/${w.id}/transitions`, { fromStepId: condition.id, toStepId: a.id, branch: 'yes' })).status).toBe(409);
    expect((await as(shared.project).post(`/workflows/${w.id}/transitions`, { fromStepId: condition.id, toStepId: b.id, branch: 'no' })).status).toBe(201);

    const otherWorkflow = await createWorkflow();
    const foreignStep = await addStep(otherWorkflow.id, 'EXIT', {});
    const res = await as(shared.project).post(`/workflows/${w.id}/transitions`, { fromStepId: triggerOf(w), toStepId: foreignStep.id });
    expect(res.status).toBe(404);
  });

  it('answers 1 of 2 concurrent identical transitions with 409, never 500', async () => {
    const w = await createWorkflow();
    const a = await addStep(w.id, 'DELAY', delay);
    const results = await Promise.all(
      [0, 1, 2].map(() => as(shared.project).post(`/workflows/${w.id}/transitions`, { fromStepId: triggerOf(w), toStepId: a.id })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
  });

  it('deletes a transition (204), then answers 404 for it', async () => {
    const w = await createWorkflow();
    const a = await addStep(w.id, 'DELAY', delay);
    const t = await connect(w.id, triggerOf(w), a.id);
    expect((await as(shared.project).del(`/workflows/${w.id}/transitions/${t.id}`)).status).toBe(204);
    expect((await as(shared.project).del(`/workflows/${w.id}/transitions/${t.id}`)).status).toBe(404);
    expect((await as(shared.project).del(`/workflows/${w.id}/transitions/bogus`)).status).toBe(404);
    expect((await as(shared.project).get(`/workflows/${w.id}`)).body.transitions).toEqual([]);
  });
});

describe('DELETE /workflows/:id/steps/:stepId', () => {
  it('refuses to delete the TRIGGER step (400)', async () => {
    const w = await createWorkflow();
    const res = await as(shared.project).del(`/workflows/${w.id}/steps/${triggerOf(w)}`);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/TRIGGER/);
  });

  it('without splice, removes the step and its transitions', async () => {
    const w = await createWorkflow();
    const a = await addStep(w.id, 'DELAY', delay);
    const b = await addStep(w.id, 'EXIT', {});
    await connect(w.id, triggerOf(w), a.id);
    await connect(w.id, a.id, b.id);
    expect((await as(shared.project).del(`/workflows/${w.id}/steps/${a.id}?splice=false`)).status).toBe(204);
    const got = (await as(shared.project).get(`/workflows/${w.id}`)).body;
    expect(got.steps.map((s: { id: string }) => s.id)).toEqual([triggerOf(w), b.id]);
    expect(got.transitions).toEqual([]);
  });

  it('with splice=true, reconnects the predecessors to the successor, keeping their branch labels', async () => {
    const w = await createWorkflow();
    const condition = await addStep(w.id, 'CONDITION', { field: 'data.plan', operator: 'exists' });
    const middle = await addStep(w.id, 'DELAY', delay);
    const mail = await addStep(w.id, 'SEND_EMAIL', { templateId: shared.templateId });
    const exit = await addStep(w.id, 'EXIT', {});
    await connect(w.id, triggerOf(w), condition.id);
    await connect(w.id, condition.id, middle.id, { branch: 'yes' });
    await connect(w.id, condition.id, exit.id, { branch: 'no' });
    await connect(w.id, middle.id, mail.id);
    expect((await as(shared.project).del(`/workflows/${w.id}/steps/${middle.id}?splice=true`)).status).toBe(204);
    const got = (await as(shared.project).get(`/workflows/${w.id}`)).body;
    const edges = got.transitions.map((t: any) => [t.fromStepId, t.toStepId, t.branch]).sort();
    expect(edges).toEqual(
      [
        [triggerOf(w), condition.id, null],
        [condition.id, mail.id, 'yes'],
        [condition.id, exit.id, 'no'],
      ].sort(),
    );
  });

  it('with splice=true on a branching step, follows its yes branch and leaves the no branch unconnected', async () => {
    const w = await createWorkflow();
    const wait = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'paid', timeout: 600 });
    const condition = await addStep(w.id, 'CONDITION', { field: 'event.amount', operator: 'greaterThan', value: 100 });
    const yes = await addStep(w.id, 'SEND_EMAIL', { templateId: shared.templateId });
    const no = await addStep(w.id, 'EXIT', {});
    const timeout = await addStep(w.id, 'EXIT', { reason: 'never paid' });
    await connect(w.id, triggerOf(w), wait.id);
    await connect(w.id, wait.id, condition.id, { waitOutcome: 'EVENT' });
    await connect(w.id, wait.id, timeout.id, { waitOutcome: 'TIMEOUT' });
    await connect(w.id, condition.id, no.id, { branch: 'no' });
    await connect(w.id, condition.id, yes.id, { branch: 'yes' });
    expect((await as(shared.project).del(`/workflows/${w.id}/steps/${condition.id}?splice=true`)).status).toBe(204);
    const got = (await as(shared.project).get(`/workflows/${w.id}`)).body;
    expect(got.transitions.map((t: any) => [t.fromStepId, t.toStepId, t.waitOutcome]).sort()).toEqual(
      [
        [triggerOf(w), wait.id, null],
        [wait.id, yes.id, 'EVENT'],
        [wait.id, timeout.id, 'TIMEOUT'],
      ].sort(),
    );
    expect(got.problems.map((p: any) => [p.kind, p.stepId])).toEqual([['unreachable_step', no.id]]);
  });

  it('with splice=true, drops a redirect that would lead a step to itself, and refuses a bad splice value', async () => {
    const w = await createWorkflow();
    const a = await addStep(w.id, 'DELAY', delay);
    const b = await addStep(w.id, 'CONDITION', { field: 'data.x', operator: 'exists' });
    await connect(w.id, triggerOf(w), a.id);
    await connect(w.id, a.id, b.id);
    await connect(w.id, b.id, a.id, { branch: 'yes' });
    expect((await as(shared.project).del(`/workflows/${w.id}/steps/${b.id}?splice=yes`)).status).toBe(400);
    expect((await as(shared.project).del(`/workflows/${w.id}/steps/${b.id}?splice=true`)).status).toBe(204);
    const got = (await as(shared.project).get(`/workflows/${w.id}`)).body;
    expect(got.transitions.map((t: any) => [t.fromStepId, t.toStepId])).toEqual([[triggerOf(w), a.id]]);
  });
});

/** A workflow whose graph can run: TRIGGER → SEND_EMAIL → DELAY → EXIT. */
async function runnableWorkflow(project = shared.project, templateId = shared.templateId, body: Record<string, unknown> = {}) {
  const w = await createWorkflow(project, body);
  const mail = await addStep(w.id, 'SEND_EMAIL', { templateId }, {}, project);
  const wait = await addStep(w.id, 'DELAY', delay, {}, project);
  const exit = await addStep(w.id, 'EXIT', {}, {}, project);
  const edges = [
    await connect(w.id, triggerOf(w), mail.id, {}, project),
    await connect(w.id, mail.id, wait.id, {}, project),
    await connect(w.id, wait.id, exit.id, {}, project),
  ];
  return { id: w.id, trigger: triggerOf(w), mail, wait, exit, edges };
}

async function contactId(project = shared.project, email = `c-${Math.random().toString(16).slice(2)}@example.com`) {
  const res = await as(project).post('/contacts', { email, data: { plan: 'pro' } });
  expect([200, 201]).toContain(res.status);
  return res.body.id as string;
}

describe('PATCH /workflows/:id', () => {
  it('updates name, description, the trigger event (either spelling) and allowReentry', async () => {
    const w = await createWorkflow();
    const res = await as(shared.project).patch(`/workflows/${w.id}`, { name: 'Renamed', description: null, eventName: 'trial_started', allowReentry: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Renamed', description: null, triggerConfig: { eventName: 'trial_started' }, allowReentry: true, enabled: false });
    expect(new Date(res.body.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(w.updatedAt).getTime());
    const viaConfig = await as(shared.project).patch(`/workflows/${w.id}`, { triggerType: 'EVENT', triggerConfig: { eventName: 'email.clicked' } });
    expect(viaConfig.body.triggerConfig).toEqual({ eventName: 'email.clicked' });
  });

  it.each([
    ['eventName', { eventName: 'a', triggerConfig: { eventName: 'b' } }],
    ['triggerType', { triggerType: 'SCHEDULE' }],
    ['triggerConfig', { triggerConfig: 'signup' }],
    ['triggerConfig.eventName', { triggerConfig: {} }],
    ['enabled', { enabled: 'true' }],
    ['allowReentry', { allowReentry: 1 }],
    ['name', { name: 'x\ny' }],
    ['name', { name: null }],
  ])('refuses a bad %s with 422 (case %#)', async (field, body) => {
    const w = await createWorkflow();
    const res = await as(shared.project).patch(`/workflows/${w.id}`, body);
    expect(res.status).toBe(422);
    expect(fieldsOf(res)).toContain(field);
  });

  it('refuses to change the trigger event once the workflow has run (409), other changes still go', async () => {
    const w = await createWorkflow();
    await sql(`update workflows set first_execution_at = now() where id = ?`, [w.id]);
    const res = await as(shared.project).patch(`/workflows/${w.id}`, { eventName: 'something_else' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(res.body.error.details).toMatchObject({ eventName: 'signed_up', firstExecutionAt: expect.any(String) });
    const same = await as(shared.project).patch(`/workflows/${w.id}`, { eventName: 'signed_up', name: 'Still fine' });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ name: 'Still fine', triggerConfig: { eventName: 'signed_up' }, firstExecutionAt: expect.any(String) });
  });

  it('enables a graph that can run, and disables it again', async () => {
    const { id } = await runnableWorkflow();
    const on = await as(shared.project).patch(`/workflows/${id}`, { enabled: true });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ enabled: true, problems: [] });
    const off = await as(shared.project).patch(`/workflows/${id}`, { enabled: false });
    expect(off.body.enabled).toBe(false);
  });

  it('a loop through a DELAY or a WAIT_FOR_EVENT may be enabled', async () => {
    const w = await createWorkflow();
    const wait = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'ping' });
    const hook = await addStep(w.id, 'WEBHOOK', { url: 'https://example.com/ping' });
    await connect(w.id, triggerOf(w), wait.id);
    await connect(w.id, wait.id, hook.id);
    await connect(w.id, hook.id, wait.id);
    expect((await as(shared.project).patch(`/workflows/${w.id}`, { enabled: true })).status).toBe(200);
  });

  describe('refuses to enable a graph that cannot run (422 naming each problem)', () => {
    async function enable(workflowId: string) {
      const res = await as(shared.project).patch(`/workflows/${workflowId}`, { enabled: true });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.errors.length).toBe(res.body.error.details.problems.length);
      const after = await as(shared.project).get(`/workflows/${workflowId}`);
      expect(after.body.enabled).toBe(false);
      return res;
    }

    it('a TRIGGER that leads nowhere', async () => {
      const w = await createWorkflow();
      const res = await enable(w.id);
      expect(problemKinds(res)).toEqual(['empty_workflow']);
      expect(res.body.error.errors[0]).toMatchObject({ field: `steps.${triggerOf(w)}`, code: 'custom', message: expect.stringMatching(/leads nowhere/) });
    });

    it('a CONDITION without its no branch, another without either', async () => {
      const w = await createWorkflow();
      const c1 = await addStep(w.id, 'CONDITION', { field: 'data.plan', operator: 'exists' });
      const c2 = await addStep(w.id, 'CONDITION', { field: 'contact.subscribed', operator: 'equals', value: true });
      await connect(w.id, triggerOf(w), c1.id);
      await connect(w.id, c1.id, c2.id, { branch: 'yes' });
      const res = await enable(w.id);
      expect(res.body.error.details.problems.map((p: any) => [p.kind, p.stepId])).toEqual([
        ['condition_branch_missing', c1.id],
        ['condition_branch_missing', c2.id],
        ['condition_branch_missing', c2.id],
      ]);
      expect(res.body.error.errors.map((e: any) => e.message).join(' ')).toMatch(/"no".*"yes".*"no"/);
    });

    it('a WAIT_FOR_EVENT with a timeout but no TIMEOUT transition, and one with a TIMEOUT transition but no timeout', async () => {
      const w = await createWorkflow();
      const timed = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'paid', timeout: 86_400 });
      const untimed = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'paid_again' });
      const exit = await addStep(w.id, 'EXIT', {});
      await connect(w.id, triggerOf(w), timed.id);
      await connect(w.id, timed.id, untimed.id, { waitOutcome: 'EVENT' });
      await connect(w.id, untimed.id, exit.id, { waitOutcome: 'TIMEOUT' });
      const res = await enable(w.id);
      expect(res.body.error.details.problems.map((p: any) => [p.kind, p.stepId])).toEqual([
        ['wait_timeout_edge_missing', timed.id],
        ['wait_timeout_edge_without_timeout', untimed.id],
      ]);
    });

    it('a dangling step no run can reach', async () => {
      const { id } = await runnableWorkflow();
      const lonely = await addStep(id, 'WEBHOOK', { url: 'https://example.com' });
      const res = await enable(id);
      expect(res.body.error.details.problems).toEqual([expect.objectContaining({ kind: 'unreachable_step', stepId: lonely.id })]);
      expect(res.body.error.errors[0].field).toBe(`steps.${lonely.id}`);
    });

    it('a loop with no DELAY or WAIT_FOR_EVENT in it', async () => {
      const w = await createWorkflow();
      const hook = await addStep(w.id, 'WEBHOOK', { url: 'https://example.com' });
      const update = await addStep(w.id, 'UPDATE_CONTACT', { updates: { n: 1 } });
      const condition = await addStep(w.id, 'CONDITION', { field: 'data.n', operator: 'greaterThan', value: 3 });
      const exit = await addStep(w.id, 'EXIT', {});
      await connect(w.id, triggerOf(w), hook.id);
      await connect(w.id, hook.id, update.id);
      await connect(w.id, update.id, condition.id);
      await connect(w.id, condition.id, exit.id, { branch: 'yes' });
      await connect(w.id, condition.id, hook.id, { branch: 'no' });
      const res = await enable(w.id);
      expect(res.body.error.details.problems).toEqual([
        expect.objectContaining({
          kind: 'cycle_without_pause',
          stepIds: [hook.id, update.id, condition.id].sort(),
          message: expect.stringMatching(/no DELAY or WAIT_FOR_EVENT/),
        }),
      ]);
    });

    it('a SEND_EMAIL whose template is gone', async () => {
      const { id, mail } = await runnableWorkflow();
      await sql(`update workflow_steps set template_id = null where id = ?`, [mail.id]);
      const res = await enable(id);
      expect(res.body.error.details.problems).toEqual([expect.objectContaining({ kind: 'template_missing', stepId: mail.id })]);
    });

    it('transitions whose labels do not fit their source (written past the API)', async () => {
      const { id, mail, edges } = await runnableWorkflow();
      await sql(`update workflow_transitions set branch = 'yes' where id = ?`, [edges[1].id]);
      const res = await enable(id);
      expect(res.body.error.details.problems).toEqual([expect.objectContaining({ kind: 'label_mismatch', stepId: mail.id, transitionId: edges[1].id })]);
      expect(res.body.error.errors[0].field).toBe(`transitions.${edges[1].id}`);
    });

    it('a plain step with two ways out (written past the API)', async () => {
      const { id, mail, exit } = await runnableWorkflow();
      await sql(`insert into workflow_transitions (workflow_id, from_step_id, to_step_id, wait_outcome) values (?, ?, ?, 'EVENT')`, [id, mail.id, exit.id]);
      const res = await enable(id);
      expect(problemKinds(res)).toEqual(['label_mismatch', 'too_many_exits']);
    });
  });
});

describe('editing an enabled workflow', () => {
  it('refuses a change that would stop reachable steps from running (422), leaving the graph as it was', async () => {
    const w = await createWorkflow();
    const condition = await addStep(w.id, 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' });
    const yes = await addStep(w.id, 'SEND_EMAIL', { templateId: shared.templateId });
    const no = await addStep(w.id, 'EXIT', {});
    await connect(w.id, triggerOf(w), condition.id);
    const yesEdge = await connect(w.id, condition.id, yes.id, { branch: 'yes' });
    await connect(w.id, condition.id, no.id, { branch: 'no' });
    expect((await as(shared.project).patch(`/workflows/${w.id}`, { enabled: true })).status).toBe(200);

    const dropBranch = await as(shared.project).del(`/workflows/${w.id}/transitions/${yesEdge.id}`);
    expect(dropBranch.status).toBe(422);
    expect(problemKinds(dropBranch)).toEqual(['condition_branch_missing']);
    const dropStep = await as(shared.project).del(`/workflows/${w.id}/steps/${yes.id}`);
    expect(dropStep.status).toBe(422);
    const got = (await as(shared.project).get(`/workflows/${w.id}`)).body;
    expect(got.steps).toHaveLength(4);
    expect(got.transitions).toHaveLength(3);

    // Timing out needs a TIMEOUT way out: a WAIT gaining a timeout on a live path is refused too.
    const wait = await addStep(w.id, 'WAIT_FOR_EVENT', { eventName: 'opened' });
    await connect(w.id, yes.id, wait.id);
    const timed = await as(shared.project).patch(`/workflows/${w.id}/steps/${wait.id}`, { config: { eventName: 'opened', timeout: 60 } });
    expect(timed.status).toBe(422);
    expect(problemKinds(timed)).toEqual(['wait_timeout_edge_missing']);
  });

  it('allows adding a step and connecting it, and a change that keeps the graph whole', async () => {
    const { id, mail, wait, edges } = await runnableWorkflow();
    expect((await as(shared.project).patch(`/workflows/${id}`, { enabled: true })).status).toBe(200);
    const hook = await addStep(id, 'WEBHOOK', { url: 'https://example.com/hook' });
    expect((await as(shared.project).get(`/workflows/${id}`)).body).toMatchObject({
      enabled: true,
      problems: [expect.objectContaining({ kind: 'unreachable_step' })],
    });
    // Rewire mail → hook → wait, a transition at a time: the hook is unreachable in between, which runs never see.
    expect((await as(shared.project).del(`/workflows/${id}/transitions/${edges[1].id}`)).status).toBe(204);
    await connect(id, mail.id, hook.id);
    await connect(id, hook.id, wait.id);
    const after = (await as(shared.project).get(`/workflows/${id}`)).body;
    expect(after).toMatchObject({ enabled: true, problems: [] });
    expect((await as(shared.project).patch(`/workflows/${id}/steps/${wait.id}`, { config: { amount: 3, unit: 'days' } })).status).toBe(200);
    expect((await as(shared.project).del(`/workflows/${id}/steps/${hook.id}?splice=true`)).status).toBe(204);
    expect((await as(shared.project).get(`/workflows/${id}`)).body.problems).toEqual([]);
  });
});

describe('DELETE /workflows/:id', () => {
  it('deletes a workflow with its steps and transitions (204); then it is gone', async () => {
    const { id, mail } = await runnableWorkflow();
    expect((await as(shared.project).del(`/workflows/${id}`)).status).toBe(204);
    expect((await as(shared.project).get(`/workflows/${id}`)).status).toBe(404);
    expect((await as(shared.project).del(`/workflows/${id}`)).status).toBe(404);
    expect(await sql(`select 1 from workflow_steps where id = ?`, [mail.id])).toEqual([]);
  });

  it.each(['RUNNING', 'WAITING'])('refuses while an execution is %s (409), and deletes once it has ended', async (status) => {
    const { id } = await runnableWorkflow();
    const contact = await contactId();
    const [execution] = await sql(`insert into workflow_executions (project_id, workflow_id, contact_id, status) values (?, ?, ?, ?) returning id`, [
      shared.project.id,
      id,
      contact,
      status,
    ]);
    const refused = await as(shared.project).del(`/workflows/${id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'CONFLICT', details: { activeExecutions: 1 } });
    expect((await as(shared.project).get(`/workflows/${id}`)).status).toBe(200);
    await sql(`update workflow_executions set status = 'COMPLETED', completed_at = now() where id = ?`, [execution.id]);
    expect((await as(shared.project).del(`/workflows/${id}`)).status).toBe(204);
  });
});

describe('GET /workflows', () => {
  it("pages, searches, filters and sorts the project's workflows", async () => {
    const { project, templateId } = await sendingProject();
    const names = ['Alpha welcome', 'beta Nurture', 'Gamma winback'];
    const created = [];
    for (const name of names) created.push(await runnableWorkflow(project, templateId, { name, eventName: name.split(' ')[1].toLowerCase() }));
    await as(project).patch(`/workflows/${created[1].id}`, { enabled: true });

    const all = await as(project).get('/workflows');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    expect(all.body.data.map((w: any) => w.name)).toEqual([...names].reverse());
    expect(all.body.data[0]).toEqual({
      id: created[2].id,
      name: 'Gamma winback',
      description: null,
      triggerType: 'EVENT',
      triggerConfig: { eventName: 'winback' },
      enabled: false,
      allowReentry: false,
      firstExecutionAt: null,
      projectId: project.id,
      stepCount: 4,
      executionCounts: { RUNNING: 0, WAITING: 0, COMPLETED: 0, EXITED: 0, FAILED: 0, CANCELLED: 0 },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const page2 = await as(project).get('/workflows?page=2&pageSize=2&sort=name&dir=asc');
    expect(page2.body).toMatchObject({ total: 3, page: 2, pageSize: 2, totalPages: 2 });
    expect(page2.body.data.map((w: any) => w.name)).toEqual(['Gamma winback']);
    expect((await as(project).get('/workflows?search=NURT')).body.data.map((w: any) => w.name)).toEqual(['beta Nurture']);
    expect((await as(project).get('/workflows?search=winback')).body.total).toBe(1);
    expect((await as(project).get('/workflows?search=%25')).body.total).toBe(0);
    expect((await as(project).get('/workflows?enabled=true')).body.data.map((w: any) => w.id)).toEqual([created[1].id]);
    expect((await as(project).get('/workflows?enabled=false')).body.total).toBe(2);
    expect((await as(project).get('/workflows?eventName=welcome')).body.data.map((w: any) => w.id)).toEqual([created[0].id]);
    expect((await as(project).get('/workflows?pageSize=1000')).body.pageSize).toBe(100);
    expect((await as(project).get('/workflows?sort=bogus&dir=sideways')).status).toBe(200);
    for (const query of ['page=0', 'page=x', 'pageSize=0', 'enabled=yes', 'search=a&search=b']) {
      expect((await as(project).get(`/workflows?${query}`)).status).toBe(400);
    }
  });
});

describe('isolation between projects', () => {
  it("answers 404 for another project's workflow, steps and transitions, whatever the verb", async () => {
    const mine = await runnableWorkflow();
    const theirs = as(other.project);
    expect((await theirs.get(`/workflows/${mine.id}`)).status).toBe(404);
    expect((await theirs.patch(`/workflows/${mine.id}`, { name: 'stolen' })).status).toBe(404);
    expect((await theirs.patch(`/workflows/${mine.id}`, { enabled: true })).status).toBe(404);
    expect((await theirs.post(`/workflows/${mine.id}/steps`, { type: 'EXIT', config: {} })).status).toBe(404);
    expect((await theirs.patch(`/workflows/${mine.id}/steps/${mine.mail.id}`, { name: 'x' })).status).toBe(404);
    expect((await theirs.del(`/workflows/${mine.id}/steps/${mine.mail.id}`)).status).toBe(404);
    expect((await theirs.post(`/workflows/${mine.id}/transitions`, { fromStepId: mine.trigger, toStepId: mine.exit.id })).status).toBe(404);
    expect((await theirs.del(`/workflows/${mine.id}/transitions/${mine.edges[0].id}`)).status).toBe(404);
    expect((await theirs.del(`/workflows/${mine.id}`)).status).toBe(404);
    expect((await theirs.get('/workflows')).body.data.map((w: any) => w.id)).not.toContain(mine.id);

    // Their own workflow cannot borrow my steps either.
    const theirsWorkflow = await createWorkflow(other.project);
    const res = await theirs.post(`/workflows/${theirsWorkflow.id}/transitions`, { fromStepId: triggerOf(theirsWorkflow), toStepId: mine.exit.id });
    expect(res.status).toBe(404);
    const got = (await as(shared.project).get(`/workflows/${mine.id}`)).body;
    expect(got).toMatchObject({ name: 'Onboarding', enabled: false });
    expect(got.steps).toHaveLength(4);
    expect(got.transitions).toHaveLength(3);
  });
});

describe('usage of templates, events and contact fields', () => {
  it('a template used by a SEND_EMAIL step is listed in its usage and cannot be deleted (409) until the step goes', async () => {
    const second = await as(shared.project).post('/templates', { name: 'Used', subject: 'S', body: '<p>b</p>', from: `hello@${shared.domain}` });
    const { id, mail } = await runnableWorkflow(shared.project, second.body.id, { name: 'Uses a template' });
    const usage = await as(shared.project).get(`/templates/${second.body.id}/usage`);
    expect(usage.body).toEqual({
      campaigns: [],
      workflowSteps: [{ id: mail.id, name: 'Send email', workflowId: id, workflowName: 'Uses a template', enabled: false }],
    });
    const refused = await as(shared.project).del(`/templates/${second.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.workflowSteps).toHaveLength(1);
    // The schema holds the rule too, for a delete that slips past the check.
    await expect(sql(`delete from templates where id = ?`, [second.body.id])).rejects.toThrow(/workflow_steps_template_id_fkey/);
    expect((await as(shared.project).del(`/workflows/${id}/steps/${mail.id}?splice=true`)).status).toBe(204);
    expect((await as(shared.project).get(`/templates/${second.body.id}/usage`)).body.workflowSteps).toEqual([]);
    expect((await as(shared.project).del(`/templates/${second.body.id}`)).status).toBe(204);
  });

  it('GET /events/:eventName/usage lists workflows it starts and those waiting for it', async () => {
    const name = `evt_${Date.now()}`;
    const started = await createWorkflow(shared.project, { name: 'Started by it', eventName: name });
    const waiting = await createWorkflow(shared.project, { name: 'Waits for it' });
    const wait = await addStep(waiting.id, 'WAIT_FOR_EVENT', { eventName: name });
    const usage = await as(shared.project).get(`/events/${encodeURIComponent(name)}/usage`);
    expect(usage.status).toBe(200);
    expect(usage.body.workflows).toEqual([
      { id: started.id, name: 'Started by it', enabled: false, trigger: true, waitStepIds: [] },
      { id: waiting.id, name: 'Waits for it', enabled: false, trigger: false, waitStepIds: [wait.id] },
    ]);
    expect((await as(other.project).get(`/events/${encodeURIComponent(name)}/usage`)).body.workflows).toEqual([]);
  });

  it('GET /contacts/fields/:field/usage lists workflows whose CONDITION reads the field', async () => {
    const { project, templateId } = await sendingProject();
    await contactId(project);
    const w = await runnableWorkflow(project, templateId, { name: 'Reads plan' });
    await addStep(w.id, 'CONDITION', { field: 'contact.data.plan.tier', operator: 'exists' }, {}, project);
    const usage = await as(project).get('/contacts/fields/plan/usage');
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ workflows: [{ id: w.id, name: 'Reads plan' }], canDelete: false });
  });
});

describe('deleting the project', () => {
  it('takes its workflows along, SEND_EMAIL steps and their templates included', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    const template = await stack.http.post('/templates', { name: 'T', subject: 'S', body: '<p>b</p>', from: `hello@${domain}` }, { key: project.secretKey });
    const { id } = await runnableWorkflow(project, template.body.id);
    const res = await stack.http.delete(`/users/@me/projects/${project.id}`, { cookie: account.cookie });
    expect(res.status).toBe(204);
    expect(await sql(`select 1 from workflows where id = ?`, [id])).toEqual([]);
  });
});

describe('GET /workflows/fields', () => {
  it('lists contact fields, custom data keys, and event names with their data keys', async () => {
    const { project } = await sendingProject();
    await as(project).post('/contacts', { email: 'ada@example.com', data: { plan: 'pro', seats: 3 } });
    const tracked = await stack.http.post(
      '/v1/track',
      { email: 'ada@example.com', event: 'purchase', data: { amount: 42, sku: 'A-1' } },
      { key: project.publicKey },
    );
    expect(tracked.status).toBe(200);
    const res = await as(project).get('/workflows/fields');
    expect(res.status).toBe(200);
    expect(res.body.contact).toEqual([
      { field: 'contact.email', type: 'string' },
      { field: 'contact.subscribed', type: 'boolean' },
      { field: 'contact.createdAt', type: 'date' },
      { field: 'contact.updatedAt', type: 'date' },
    ]);
    expect(res.body.data).toEqual(
      expect.arrayContaining([
        { field: 'data.plan', type: 'string', coverage: 100 },
        { field: 'data.seats', type: 'number', coverage: 100 },
      ]),
    );
    expect(res.body.events).toContainEqual({
      name: 'purchase',
      fields: [
        { field: 'event.amount', type: 'number' },
        { field: 'event.sku', type: 'string' },
      ],
    });
    expect(res.body.events.map((e: any) => e.name)).toEqual(expect.arrayContaining(['contact.subscribed', 'email.opened']));
    const fresh = await as(other.project).get('/workflows/fields');
    expect(fresh.body.events.find((e: any) => e.name === 'purchase')).toBeUndefined();
  });
});

describe('workflowGraph (pure)', () => {
  const step = (id: string, type: GraphStep['type'], config: Record<string, unknown> = {}): GraphStep => ({ id, type, config });
  const edge = (id: string, from: string, to: string, labels: Partial<GraphTransition> = {}): GraphTransition => ({
    id,
    fromStepId: from,
    toStepId: to,
    branch: null,
    waitOutcome: null,
    ...labels,
  });

  it('nextStepId follows the label the step decided, and ends the run where there is no way out', () => {
    const transitions = [
      edge('t1', 'trigger', 'cond'),
      edge('t2', 'cond', 'a', { branch: 'yes' }),
      edge('t3', 'cond', 'b', { branch: 'no' }),
      edge('t4', 'wait', 'c', { waitOutcome: 'EVENT' }),
      edge('t5', 'wait', 'd', { waitOutcome: 'TIMEOUT' }),
    ];
    expect(nextStepId(transitions, 'trigger')).toBe('cond');
    expect(nextStepId(transitions, 'cond', 'yes')).toBe('a');
    expect(nextStepId(transitions, 'cond', 'no')).toBe('b');
    expect(nextStepId(transitions, 'cond')).toBeNull();
    expect(nextStepId(transitions, 'wait', 'EVENT')).toBe('c');
    expect(nextStepId(transitions, 'wait', 'TIMEOUT')).toBe('d');
    expect(nextStepId(transitions, 'a')).toBeNull();
  });

  it('runProblems ignores what runs cannot reach; graphProblems does not', () => {
    const steps = [step('trigger', 'TRIGGER'), step('a', 'DELAY'), step('lonely', 'CONDITION')];
    const transitions = [edge('t1', 'trigger', 'a')];
    expect(
      graphProblems(steps, transitions)
        .map((p) => p.kind)
        .sort(),
    ).toEqual(['condition_branch_missing', 'condition_branch_missing', 'unreachable_step']);
    expect(runProblems(steps, transitions)).toEqual([]);
  });

  it('finds a loop without a pause in a 20,000-step chain without exhausting the stack', () => {
    const n = 20_000;
    const steps = [step('trigger', 'TRIGGER'), ...Array.from({ length: n }, (_, i) => step(`s${i}`, 'WEBHOOK'))];
    const transitions = [
      edge('t', 'trigger', 's0'),
      ...Array.from({ length: n - 1 }, (_, i) => edge(`e${i}`, `s${i}`, `s${i + 1}`)),
      edge('back', `s${n - 1}`, 's0'),
    ];
    const problems = graphProblems(steps, transitions);
    expect(problems.map((p) => p.kind)).toEqual(['cycle_without_pause']);
    expect(problems[0].stepIds).toHaveLength(n);
  });
});
