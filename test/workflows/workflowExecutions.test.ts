import crypto from 'node:crypto';
import { tsToMs } from '@temporalio/common/lib/time';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import type { TestProject } from '../support/accounts';
import { verifyWebhookSignature } from '../../lib/webhooks/webhookSignature';
import { chain, insertWorkflow } from './workflowDefinitionRows';
import { executionSweepScheduleId } from '../../worker/schedules';
import { accountWithProject } from '../support/accounts';

/** Automation executions end to end: real HTTP, PostgreSQL, Temporal, SMTP and a webhook receiver. */
jest.setTimeout(120_000);

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let receiver: WebhookReceiver;
let stack: TestStack;
let project: TestProject;
let domain: string;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  receiver = await startWebhookReceiver();
  stack = await startTestStack({
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE: 'true', DELIVERY_RETRY_DELAYS: '1s' },
  });
  ({ project, domain } = await projectWithVerifiedDomain(stack, dns));
});

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);
const unique = (prefix: string) => `${prefix}-${crypto.randomBytes(4).toString('hex')}`;

async function template(overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await stack.http.post(
    '/templates',
    {
      name: unique('t'),
      subject: 'Hi {{firstName}} ({{plan}})',
      body: '<p>Hello {{firstName}}, order {{orderId}}</p>',
      from: `hello@${domain}`,
      type: 'TRANSACTIONAL',
      ...overrides,
    },
    { key: project.secretKey },
  );
  expect(res.status).toBe(201);
  return res.body.id;
}

async function track(email: string, event: string, data?: Record<string, unknown>, key = project.publicKey) {
  const res = await stack.http.post('/v1/track', { email, event, ...(data ? { data } : {}) }, { key });
  expect(res.status).toBe(200);
  return res.body.data as { contact: string; event: string };
}

const executions = async (workflowId: string, query = '') =>
  (await stack.http.get(`/workflows/${workflowId}/executions${query}`, { key: project.secretKey })).body;
const execution = async (workflowId: string, id: string) =>
  (await stack.http.get(`/workflows/${workflowId}/executions/${id}`, { key: project.secretKey })).body;

/** The one execution of a contact in a workflow, once it reached `status`. */
async function untilStatus(workflowId: string, contactId: string, status: string, timeoutMs = 60_000) {
  return eventually(async () => {
    const list = await executions(workflowId);
    const mine = list.data.filter((e: any) => e.contactId === contactId);
    if (mine.length !== 1) throw new Error(`${mine.length} executions`);
    if (mine[0].status !== status) throw new Error(`status ${mine[0].status}`);
    return execution(workflowId, mine[0].id);
  }, timeoutMs);
}

describe('execution walks', () => {
  it('SEND_EMAIL → DELAY (a fraction of a minute) → SEND_EMAIL: two rendered mails through the send pipeline, then COMPLETED', async () => {
    const templateId = await template();
    const event = unique('signed-up');
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      steps: [
        { key: 'welcome', type: 'SEND_EMAIL', config: { templateId }, templateId },
        { key: 'pause', type: 'DELAY', config: { amount: 0.05, unit: 'minutes' } },
        { key: 'followUp', type: 'SEND_EMAIL', config: { templateId }, templateId },
      ],
      transitions: chain('welcome', 'pause', 'followUp'),
    });
    const email = `${unique('ada')}@example.org`;
    const tracked = await track(email, event, { firstName: 'Ada', orderId: 'A-17', plan: { value: 'pro', persistent: false } });

    // A wait of 3 s can be over between two polls of the API, so the wait is proven by what it
    // leaves behind: a 3 s durable timer in the run's history, and a DELAY row that completed at
    // least 3 s after it began (both times from PostgreSQL). The WAITING state itself, with its
    // step and waitUntil, is shown by the cancel signal's test, whose DELAY lasts hours.
    const done = await untilStatus(wf.id, tracked.contact, 'COMPLETED', 60_000);
    expect(done.triggerEventId).toBe(tracked.event);
    expect(done.context).toMatchObject({ firstName: 'Ada', orderId: 'A-17', plan: 'pro' });
    expect(done.steps.map((s: any) => [s.sequence, s.type, s.status])).toEqual([
      [0, 'TRIGGER', 'COMPLETED'],
      [1, 'SEND_EMAIL', 'COMPLETED'],
      [2, 'DELAY', 'COMPLETED'],
      [3, 'SEND_EMAIL', 'COMPLETED'],
    ]);
    const pause = done.steps[2];
    expect(pause).toMatchObject({ stepId: wf.steps.pause, output: { outcome: 'ELAPSED' } });
    expect(Date.parse(pause.completedAt) - Date.parse(pause.startedAt)).toBeGreaterThanOrEqual(3_000);
    expect(done.completedAt).toBeTruthy();

    const mails = smtp.messages.filter((m) => m.envelopeTo[0] === email);
    expect(mails).toHaveLength(2);
    expect(mails[0].parsed.subject).toBe('Hi Ada (pro)');
    expect(mails[0].parsed.html).toContain('order A-17');
    const rows = await sql(`select source, status, workflow_execution_id, template_id from emails where to_address = ? order by created_at`, [email]);
    expect(rows).toEqual([
      { source: 'WORKFLOW', status: 'SENT', workflow_execution_id: done.id, template_id: templateId },
      { source: 'WORKFLOW', status: 'SENT', workflow_execution_id: done.id, template_id: templateId },
    ]);
    const [workflow] = await sql(`select first_execution_at from workflows where id = ?`, [wf.id]);
    expect(workflow.first_execution_at).toBeTruthy();

    // Operators find it in Temporal by its id and search attributes.
    const handle = stack.temporal.workflow.getHandle(`execution-${done.id}`);
    const described = await handle.describe();
    expect(described.searchAttributes.ProjectId).toEqual([project.id]);
    expect(described.searchAttributes.ContactId).toEqual([tracked.contact]);
    // The DELAY waited on a durable timer of its length, which fired.
    const events = (await handle.fetchHistory()).events ?? [];
    const timer = events.find((e) => e.timerStartedEventAttributes && tsToMs(e.timerStartedEventAttributes.startToFireTimeout) === 3_000);
    expect(timer).toBeDefined();
    expect(events.some((e) => e.timerFiredEventAttributes && String(e.timerFiredEventAttributes.startedEventId) === String(timer!.eventId))).toBe(true);
  });

  it('SEND_EMAIL whose relay refuses for now: the walk goes on and the mail arrives through a delivery workflow with retries', async () => {
    const templateId = await template();
    const event = unique('later');
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      steps: [{ key: 'mail', type: 'SEND_EMAIL', config: { templateId }, templateId }],
      transitions: chain('mail'),
    });
    const email = `${unique('later')}@example.org`;
    smtp.failTemporarily(email, 1);
    const tracked = await track(email, event, { firstName: 'Lat' });
    const done = await untilStatus(wf.id, tracked.contact, 'COMPLETED');
    expect(done.steps[1].output).toMatchObject({ status: 'QUEUED', to: email });
    const mail = await smtp.waitFor((m) => m.envelopeTo[0] === email, 30_000);
    expect(mail.parsed.subject).toBe('Hi Lat ()');
    await eventually(async () => {
      const [row] = await sql(`select status, attempts from emails where id = ?`, [done.steps[1].output.emailId]);
      expect(row).toEqual({ status: 'SENT', attempts: 2 });
    });
    const delivery = await stack.temporal.workflow.getHandle(`send-${done.steps[1].output.emailId}`).describe();
    expect(delivery.searchAttributes.ContactId).toEqual([tracked.contact]);
  });

  it('CONDITION takes the yes and the no branch on fresh contact data; EXIT ends EXITED with its reason', async () => {
    const event = unique('checkout');
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      allowReentry: true,
      steps: [
        { key: 'isPro', type: 'CONDITION', config: { field: 'data.plan', operator: 'equals', value: 'pro' } },
        { key: 'bigOrder', type: 'CONDITION', config: { field: 'event.total', operator: 'greaterThan', value: 100 } },
        { key: 'tag', type: 'UPDATE_CONTACT', config: { updates: { vip: true } } },
        { key: 'stop', type: 'EXIT', config: { reason: 'Not a pro' } },
      ],
      transitions: [
        { from: 'trigger', to: 'isPro' },
        { from: 'isPro', to: 'bigOrder', branch: 'yes' },
        { from: 'isPro', to: 'stop', branch: 'no' },
        { from: 'bigOrder', to: 'tag', branch: 'yes' },
        { from: 'bigOrder', to: 'stop', branch: 'no' },
      ],
    });
    const pro = await track(`${unique('pro')}@example.org`, event, { plan: 'pro', total: 250 });
    const free = await track(`${unique('free')}@example.org`, event, { plan: 'free', total: 250 });
    const small = await track(`${unique('small')}@example.org`, event, { plan: 'pro', total: 20 });

    const proDone = await untilStatus(wf.id, pro.contact, 'COMPLETED');
    expect(proDone.steps.map((s: any) => s.output?.branch ?? s.type)).toEqual(['TRIGGER', 'yes', 'yes', 'UPDATE_CONTACT']);
    const contact = (await stack.http.get(`/contacts/${pro.contact}`, { key: project.secretKey })).body;
    expect(contact.data).toMatchObject({ plan: 'pro', vip: true });

    const freeDone = await untilStatus(wf.id, free.contact, 'EXITED');
    expect(freeDone.exitReason).toBe('Not a pro');
    expect(freeDone.steps.map((s: any) => s.output?.branch ?? s.type)).toEqual(['TRIGGER', 'no', 'EXIT']);
    const smallDone = await untilStatus(wf.id, small.contact, 'EXITED');
    expect(smallDone.steps.map((s: any) => s.output?.branch ?? s.type)).toEqual(['TRIGGER', 'yes', 'no', 'EXIT']);
  });

  it('WAIT_FOR_EVENT: the event takes the EVENT edge with its data merged into the context; silence takes the TIMEOUT edge', async () => {
    const templateId = await template({ subject: 'Order {{orderId}}' });
    // The same wait in two workflows: for the contact who pays, a timeout no slow machine reaches
    // before the event does (the wait still has its TIMEOUT edge to not take); for the silent
    // one, a short timeout that nothing races.
    const waitingWorkflow = (event: string, timeout: number) =>
      insertWorkflow(stack, project.id, {
        eventName: event,
        steps: [
          { key: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: `${event}-paid`, timeout } },
          { key: 'thanks', type: 'SEND_EMAIL', config: { templateId }, templateId },
          { key: 'gaveUp', type: 'EXIT', config: { reason: 'Never paid' } },
        ],
        transitions: [
          { from: 'trigger', to: 'wait' },
          { from: 'wait', to: 'thanks', waitOutcome: 'EVENT' },
          { from: 'wait', to: 'gaveUp', waitOutcome: 'TIMEOUT' },
        ],
      });
    const event = unique('cart');
    const wf = await waitingWorkflow(event, 600);
    const payer = `${unique('payer')}@example.org`;
    const started = await track(payer, event, { cart: 3 });
    const waiting = await untilStatus(wf.id, started.contact, 'WAITING');
    expect(waiting.waitingForEvent).toBe(`${event}-paid`);
    await track(payer, `${event}-paid`, { orderId: 'P-99' });
    const paid = await untilStatus(wf.id, started.contact, 'COMPLETED');
    expect(paid.context).toMatchObject({ cart: 3, orderId: 'P-99' });
    expect(paid.steps[1].output).toMatchObject({ outcome: 'EVENT', event: { name: `${event}-paid` } });
    expect((await smtp.waitFor((m) => m.envelopeTo[0] === payer)).parsed.subject).toBe('Order P-99');

    const quietEvent = unique('quiet-cart');
    const quiet = await waitingWorkflow(quietEvent, 2);
    const silent = await track(`${unique('silent')}@example.org`, quietEvent);
    const timedOut = await untilStatus(quiet.id, silent.contact, 'EXITED');
    expect(timedOut.exitReason).toBe('Never paid');
    expect(timedOut.steps[1].output).toEqual({ outcome: 'TIMEOUT' });
  });

  it('WEBHOOK: a signed request with the default body, retried after a 5xx', async () => {
    const event = unique('hooked');
    const path = `/${unique('hook')}`;
    let calls = 0;
    receiver.on(path, (_req, res) => {
      calls++;
      res.statusCode = calls === 1 ? 503 : 200;
      res.end(calls === 1 ? 'busy' : '{"ok":true}');
    });
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      name: 'Hooked',
      steps: [{ key: 'hook', type: 'WEBHOOK', config: { url: `${receiver.url}${path}?who={{email}}`, headers: { 'X-Plan': '{{plan}}' } } }],
      transitions: chain('hook'),
    });
    const email = `${unique('hook')}@example.org`;
    const tracked = await track(email, event, { plan: 'team' });
    const done = await untilStatus(wf.id, tracked.contact, 'COMPLETED');
    expect(done.steps[1].output).toMatchObject({ status: 200, attempts: 2 });
    const requests = receiver.requests.filter((r) => r.path.startsWith(path));
    expect(requests).toHaveLength(2);
    const last = requests[1];
    expect(last.path).toBe(`${path}?who=${encodeURIComponent(email).replace('%40', '@')}`);
    expect(last.headers['x-plan']).toBe('team');
    const [{ webhook_secret }] = await sql(`select webhook_secret from projects where id = ?`, [project.id]);
    expect(verifyWebhookSignature(last.headers['x-mailroom-signature'] as string, last.body, webhook_secret)).toMatchObject({ valid: true });
    expect(JSON.parse(last.body)).toMatchObject({
      contact: { id: tracked.contact, email },
      workflow: { id: wf.id, name: 'Hooked' },
      execution: { id: done.id },
      event: { plan: 'team' },
    });
  });

  it('a step that cannot work fails the execution with the reason (a 4xx webhook)', async () => {
    const event = unique('bad-hook');
    const path = `/${unique('gone')}`;
    receiver.on(path, (_req, res) => {
      res.statusCode = 410;
      res.end('gone');
    });
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      steps: [{ key: 'hook', type: 'WEBHOOK', config: { url: `${receiver.url}${path}` } }],
      transitions: chain('hook'),
    });
    const tracked = await track(`${unique('x')}@example.org`, event);
    const failed = await untilStatus(wf.id, tracked.contact, 'FAILED');
    expect(failed.error).toMatch(/WEBHOOK/);
    expect(failed.steps[1]).toMatchObject({ status: 'FAILED' });
  });
});

describe('triggers and re-entry', () => {
  it('allowReentry false: one execution per contact ever, even for two events at the same instant; true: one per event', async () => {
    const event = unique('visit');
    const once = await insertWorkflow(stack, project.id, {
      eventName: event,
      allowReentry: false,
      steps: [{ key: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' } }],
      transitions: chain('wait'),
    });
    const every = await insertWorkflow(stack, project.id, {
      eventName: event,
      allowReentry: true,
      steps: [{ key: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' } }],
      transitions: chain('wait'),
    });
    const email = `${unique('twice')}@example.org`;
    await Promise.all([track(email, event), track(email, event)]);
    await track(email, event);
    await eventually(async () => expect((await executions(every.id)).total).toBe(3));
    const single = await executions(once.id);
    expect(single.total).toBe(1);
    await eventually(async () => expect((await executions(once.id, '?status=WAITING')).total).toBe(1));
    expect((await stack.http.post(`/workflows/${once.id}/executions/cancel-all`, {}, { key: project.secretKey })).body).toEqual({ cancelled: 1 });
    expect((await stack.http.post(`/workflows/${every.id}/executions/cancel-all`, {}, { key: project.secretKey })).body).toEqual({ cancelled: 3 });
    await eventually(async () => {
      const described = await stack.temporal.workflow.getHandle(`execution-${single.data[0].id}`).describe();
      expect(described.status.name).toBe('COMPLETED');
    });
    expect((await executions(every.id, '?status=CANCELLED')).total).toBe(3);
  });

  it('a disabled workflow starts nothing; UPDATE_CONTACT emits contact.unsubscribed, which starts another workflow', async () => {
    const event = unique('leave');
    const off = await insertWorkflow(stack, project.id, {
      eventName: event,
      enabled: false,
      steps: [{ key: 'stop', type: 'EXIT' }],
      transitions: chain('stop'),
    });
    const leaving = await insertWorkflow(stack, project.id, {
      eventName: event,
      steps: [{ key: 'unsubscribe', type: 'UPDATE_CONTACT', config: { subscriptionAction: 'unsubscribe', updates: { leftAt: 'today', plan: null } } }],
      transitions: chain('unsubscribe'),
    });
    const goodbye = await insertWorkflow(stack, project.id, {
      eventName: 'contact.unsubscribed',
      steps: [{ key: 'stop', type: 'EXIT', config: { reason: 'goodbye' } }],
      transitions: chain('stop'),
    });
    const tracked = await track(`${unique('leaver')}@example.org`, event, { plan: 'pro' });
    await untilStatus(leaving.id, tracked.contact, 'COMPLETED');
    const contact = (await stack.http.get(`/contacts/${tracked.contact}`, { key: project.secretKey })).body;
    expect(contact.subscribed).toBe(false);
    expect(contact.data).toEqual({ leftAt: 'today' });
    const bye = await untilStatus(goodbye.id, tracked.contact, 'EXITED');
    expect(bye.exitReason).toBe('goodbye');
    expect((await executions(off.id)).total).toBe(0);
    await sql(`update workflows set enabled = false where id = ?`, [goodbye.id]);
  });

  it('MARKETING mail to an unsubscribed contact is recorded SUPPRESSED and the walk goes on', async () => {
    const event = unique('promo');
    const templateId = await template({ type: 'MARKETING' });
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      steps: [{ key: 'promo', type: 'SEND_EMAIL', config: { templateId }, templateId }],
      transitions: chain('promo'),
    });
    const email = `${unique('unsub')}@example.org`;
    await stack.http.post('/contacts', { email, subscribed: false }, { key: project.secretKey });
    const tracked = (await stack.http.post('/v1/track', { email, event, subscribed: false, preserveExistingSubscription: true }, { key: project.publicKey }))
      .body.data;
    const done = await untilStatus(wf.id, tracked.contact, 'COMPLETED');
    expect(done.steps[1].output).toMatchObject({ status: 'SUPPRESSED' });
    const [row] = await sql(`select status, error from emails where workflow_execution_id = ?`, [done.id]);
    expect(row).toEqual({ status: 'SUPPRESSED', error: 'The contact is unsubscribed' });
    expect(smtp.messages.some((m) => m.envelopeTo[0] === email)).toBe(false);
  });
});

describe('the track path', () => {
  it('a project without workflows records its tracks and starts nothing, even for an event another project automates; a workflow it adds starts on its next track', async () => {
    const event = unique('page-view');
    // Another project of the same deployment automates this very event name.
    const elsewhere = await insertWorkflow(stack, project.id, { eventName: event, steps: [{ key: 'stop', type: 'EXIT' }], transitions: chain('stop') });
    const { project: quiet } = await accountWithProject(stack.http);
    const tracked = await Promise.all(Array.from({ length: 30 }, (_, i) => track(`${unique(`q${i}`)}@example.org`, event, undefined, quiet.publicKey)));
    expect((await stack.http.get('/events', { key: quiet.secretKey })).body.total).toBe(30);
    expect((await stack.http.get('/contacts', { key: quiet.secretKey })).body.total).toBe(30);
    // Executions are recorded before a track is answered: none exists for these contacts, in any
    // project. (What the track path costs such a project in statements is a figure of
    // `npm run bench:platform`.)
    const contactIds = tracked.map((t) => t.contact);
    const [none] = await sql(`select count(*)::int as n from workflow_executions where project_id = ? or contact_id = any(?::uuid[])`, [
      quiet.id,
      `{${contactIds.join(',')}}`,
    ]);
    expect(none.n).toBe(0);
    expect((await executions(elsewhere.id)).total).toBe(0);

    // The project adds a workflow for the event: its very next track starts it.
    const own = await insertWorkflow(stack, quiet.id, { eventName: event, steps: [{ key: 'stop', type: 'EXIT' }], transitions: chain('stop') });
    const next = await track(`${unique('q-after')}@example.org`, event, undefined, quiet.publicKey);
    const started = (await stack.http.get(`/workflows/${own.id}/executions`, { key: quiet.secretKey })).body;
    expect(started.data.map((e: { contactId: string }) => e.contactId)).toEqual([next.contact]);
    expect((await executions(elsewhere.id)).total).toBe(0);
    await sql(`update workflows set enabled = false where id in (?, ?)`, [elsewhere.id, own.id]);
  });
});

describe('the executions API', () => {
  it('starts one by hand (contactId or email, context), lists with a status filter, cancels one; bad input is a 4xx', async () => {
    const wf = await insertWorkflow(stack, project.id, {
      eventName: unique('manual'),
      allowReentry: false,
      steps: [{ key: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: 'never' } }],
      transitions: chain('wait'),
    });
    const email = `${unique('manual')}@example.org`;
    const contact = (await stack.http.post('/contacts', { email }, { key: project.secretKey })).body;
    const key = { key: project.secretKey };
    const started = await stack.http.post(`/workflows/${wf.id}/executions`, { email, context: { source: 'admin' } }, key);
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ workflowId: wf.id, contactId: contact.id, status: 'RUNNING', context: { source: 'admin' } });
    const again = await stack.http.post(`/workflows/${wf.id}/executions`, { contactId: contact.id }, key);
    expect(again.status).toBe(409);

    expect((await stack.http.post(`/workflows/${wf.id}/executions`, {}, key)).status).toBe(422);
    expect((await stack.http.post(`/workflows/${wf.id}/executions`, { contactId: contact.id, email }, key)).status).toBe(422);
    expect((await stack.http.post(`/workflows/${wf.id}/executions`, { contactId: 'nope' }, key)).status).toBe(422);
    expect((await stack.http.post(`/workflows/${wf.id}/executions`, { email: contact.email, context: 'x' }, key)).status).toBe(422);
    expect((await stack.http.post(`/workflows/${wf.id}/executions`, { email: 'nobody@example.org' }, key)).body.error.code).toBe('CONTACT_NOT_FOUND');
    expect((await stack.http.post(`/workflows/${crypto.randomUUID()}/executions`, { email }, key)).body.error.code).toBe('WORKFLOW_NOT_FOUND');
    expect((await stack.http.get(`/workflows/${wf.id}/executions?status=DONE`, key)).status).toBe(400);
    expect((await stack.http.get(`/workflows/${wf.id}/executions/${crypto.randomUUID()}`, key)).status).toBe(404);
    expect((await stack.http.get(`/workflows/${wf.id}/executions`, { key: project.publicKey })).status).toBe(401);

    await eventually(async () => expect((await executions(wf.id, '?status=WAITING')).total).toBe(1));
    const cancelled = await stack.http.delete(`/workflows/${wf.id}/executions/${started.body.id}`, key);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'CANCELLED' });
    expect(cancelled.body.steps[1]).toMatchObject({ type: 'WAIT_FOR_EVENT', status: 'CANCELLED' });
    expect((await stack.http.delete(`/workflows/${wf.id}/executions/${started.body.id}`, key)).status).toBe(409);
    await eventually(async () => {
      const described = await stack.temporal.workflow.getHandle(`execution-${started.body.id}`).describe();
      expect(described.status.name).toBe('COMPLETED');
    });
    const list = await executions(wf.id, '?status=CANCELLED&pageSize=1');
    expect(list).toMatchObject({ total: 1, page: 1, pageSize: 1, totalPages: 1 });
  });

  it('the cancel signal ends an execution CANCELLED too', async () => {
    const event = unique('signal-cancel');
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      steps: [{ key: 'wait', type: 'DELAY', config: { amount: 2, unit: 'hours' } }],
      transitions: chain('wait'),
    });
    const tracked = await track(`${unique('sig')}@example.org`, event);
    const waiting = await untilStatus(wf.id, tracked.contact, 'WAITING');
    // A DELAY waiting shows its step and when it ends.
    expect(waiting.currentStepId).toBe(wf.steps.wait);
    expect(Date.parse(waiting.waitUntil)).toBeGreaterThan(Date.now());
    expect(Date.parse(waiting.waitUntil)).toBeLessThanOrEqual(Date.now() + 2 * 3600_000);
    await stack.temporal.workflow.getHandle(`execution-${waiting.id}`).signal('cancel', { reason: 'operator' });
    const done = await untilStatus(wf.id, tracked.contact, 'CANCELLED');
    expect(done.exitReason).toBe('operator');
  });
});

describe('definitions edited while executions wait', () => {
  // The waits are WAIT_FOR_EVENTs without a timeout, ended by the test's own track once the edit
  // is made: a DELAY would end on its own, before or after the edit as the machine's speed has it.
  it('the step after a wait is resolved when the wait ends; a deleted waiting step ends the execution EXITED with the reason', async () => {
    const event = unique('edited');
    const go = `${event}-go`;
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      allowReentry: true,
      steps: [
        { key: 'pause', type: 'WAIT_FOR_EVENT', config: { eventName: go } },
        { key: 'old', type: 'EXIT', config: { reason: 'old path' } },
        { key: 'new', type: 'EXIT', config: { reason: 'new path' } },
      ],
      transitions: [
        { from: 'trigger', to: 'pause' },
        { from: 'pause', to: 'old', waitOutcome: 'EVENT' },
      ],
    });
    const firstEmail = `${unique('e1')}@example.org`;
    const first = await track(firstEmail, event);
    await untilStatus(wf.id, first.contact, 'WAITING');
    // Edited while it waits: the wait now leads to another step. Then the wait ends.
    await sql(`update workflow_transitions set to_step_id = ? where from_step_id = ?`, [wf.steps.new, wf.steps.pause]);
    await track(firstEmail, go);
    expect((await untilStatus(wf.id, first.contact, 'EXITED')).exitReason).toBe('new path');

    const secondEmail = `${unique('e2')}@example.org`;
    const second = await track(secondEmail, event);
    await untilStatus(wf.id, second.contact, 'WAITING');
    await sql(`delete from workflow_steps where id = ?`, [wf.steps.pause]);
    await track(secondEmail, go);
    const gone = await untilStatus(wf.id, second.contact, 'EXITED');
    expect(gone.exitReason).toBe(`The step ${wf.steps.pause} was deleted from the workflow while the execution waited in it`);
  });
});

describe('through the definition API', () => {
  it('a workflow built and enabled over HTTP runs; a step spliced out while an execution waits before it is skipped', async () => {
    const k = { key: project.secretKey };
    const event = unique('api-built');
    const go = `${event}-go`;
    const created = await stack.http.post('/workflows', { name: 'Built over HTTP', eventName: event, allowReentry: true }, k);
    expect(created.status).toBe(201);
    const wf = created.body;
    const trigger = wf.steps.find((s: any) => s.type === 'TRIGGER');
    const step = async (type: string, config: Record<string, unknown>) => {
      const res = await stack.http.post(`/workflows/${wf.id}/steps`, { type, config }, k);
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const link = async (fromStepId: string, toStepId: string) =>
      expect((await stack.http.post(`/workflows/${wf.id}/transitions`, { fromStepId, toStepId }, k)).status).toBe(201);
    // A wait the test ends itself once the step after it is spliced out (a DELAY could end first).
    const pause = await step('WAIT_FOR_EVENT', { eventName: go });
    const tag = await step('UPDATE_CONTACT', { updates: { tagged: true } });
    const end = await step('EXIT', { reason: 'end of the line' });
    await link(trigger.id, pause);
    await link(pause, tag);
    await link(tag, end);
    const enabled = await stack.http.patch(`/workflows/${wf.id}`, { enabled: true }, k);
    expect(enabled.status).toBe(200);

    const email = `${unique('h1')}@example.org`;
    const first = await track(email, event);
    await untilStatus(wf.id, first.contact, 'WAITING');
    expect((await stack.http.delete(`/workflows/${wf.id}/steps/${tag}?splice=true`, k)).status).toBe(204);
    await track(email, go);
    const done = await untilStatus(wf.id, first.contact, 'EXITED');
    expect(done.exitReason).toBe('end of the line');
    expect(done.steps.map((s: any) => s.type)).toEqual(['TRIGGER', 'WAIT_FOR_EVENT', 'EXIT']);
    expect((await stack.http.get(`/contacts/${first.contact}`, k)).body.data).toEqual({});
  });
});

describe('the execution sweep', () => {
  it('starts executions recorded but never started, creates those an event never got, and hands waiting ones their missed events', async () => {
    const event = unique('swept');
    const wf = await insertWorkflow(stack, project.id, {
      eventName: event,
      allowReentry: true,
      steps: [{ key: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: `${event}-go` } }],
      transitions: chain('wait'),
    });
    const em = stack.orm.em.fork();
    // Enabled a while ago (the database stamps enabled_at itself), so a backdated event counts.
    await em.execute(`update workflows set enabled_at = now() - interval '5 minutes' where id = ?`, [wf.id]);
    const contactA = (await stack.http.post('/contacts', { email: `${unique('a')}@example.org` }, { key: project.secretKey })).body;
    const contactB = (await stack.http.post('/contacts', { email: `${unique('b')}@example.org` }, { key: project.secretKey })).body;
    // A: its row was written, then the process died before the start (backdated past the grace).
    const [unstarted] = await em.execute(
      `insert into workflow_executions (project_id, workflow_id, contact_id, started_at, current_step_id) values (?, ?, ?, now() - interval '1 minute', ?) returning id`,
      [project.id, wf.id, contactA.id, wf.steps.trigger],
    );
    // B: its event was recorded, then the process died before the row.
    const [missed] = await em.execute(
      `insert into events (project_id, contact_id, name, source, data, created_at) values (?, ?, ?, 'API', '{"n":1}', now() - interval '40 seconds') returning id`,
      [project.id, contactB.id, event],
    );
    await stack.temporal.schedule.getHandle(executionSweepScheduleId(stack.config.temporalTaskQueue)).trigger();
    const a = await untilStatus(wf.id, contactA.id, 'WAITING');
    expect(a.id).toBe(unstarted.id);
    const b = await untilStatus(wf.id, contactB.id, 'WAITING');
    expect(b).toMatchObject({ triggerEventId: missed.id, context: { n: 1 } });

    // A's awaited event was recorded, but its signal was never sent.
    await em.execute(`update workflow_executions set waiting_since = now() - interval '1 minute' where id = ?`, [a.id]);
    await em.execute(`insert into events (project_id, contact_id, name, source, data) values (?, ?, ?, 'API', '{"go":true}')`, [
      project.id,
      contactA.id,
      `${event}-go`,
    ]);
    await stack.temporal.schedule.getHandle(executionSweepScheduleId(stack.config.temporalTaskQueue)).trigger();
    const done = await untilStatus(wf.id, contactA.id, 'COMPLETED');
    expect(done.context).toEqual({ go: true });
  });
});
