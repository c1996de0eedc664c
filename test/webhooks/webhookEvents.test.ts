import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { expectPayload, hookFor, messageOf } from '../support/webhookDeliveries';

/**
 * Outbound webhooks (contract 18) for the events that need no mail: a tracked event, subscription
 * changes and a tracked segment's entry and exit, each recorded through its own front door and
 * received, signed, by a real HTTP endpoint (the email events: webhookEmailEvents.test.ts).
 */
let stack: TestStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  // The receiver listens on 127.0.0.1.
  stack = await startTestStack({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

async function newHook() {
  const { project } = await accountWithProject(stack.http);
  return { project, hook: await hookFor(stack, receiver, project) };
}

const api = (project: TestProject) => ({
  post: (path: string, body: unknown) => stack.http.post(path, body, { key: project.secretKey }),
  patch: (path: string, body: unknown) => stack.http.patch(path, body, { key: project.secretKey }),
});

describe('tracked events', () => {
  it('POST /v1/track: source "tracked", the contact it created, no email part', async () => {
    const { project, hook } = await newHook();
    const res = await stack.http.post('/v1/track', { event: 'signup', email: 'Ada@Example.com', data: { plan: 'pro' } }, { key: project.publicKey });
    expect(res.status).toBe(200);
    const { payload } = await messageOf(hook, 'signup');
    expect(payload.data.event.id).toBe(res.body.data.event);
    await expectPayload(stack, hook, payload, { source: 'tracked', contact: { id: res.body.data.contact, email: 'ada@example.com' } });
  });

  it('POST /events/track (secret key), a name that looks like a system one but is not reserved: still "tracked"', async () => {
    const { project, hook } = await newHook();
    const res = await api(project).post('/events/track', { event: 'contact.upgraded', email: 'bo@example.com' });
    expect(res.status).toBe(200);
    const { payload } = await messageOf(hook, 'contact.upgraded');
    await expectPayload(stack, hook, payload, { source: 'tracked', contact: { id: res.body.data.contact, email: 'bo@example.com' } });
  });
});

describe('subscription changes', () => {
  it('PATCH /contacts/:id subscribed: contact.unsubscribed, then contact.subscribed, each with the contact', async () => {
    const { project, hook } = await newHook();
    const created = await api(project).post('/contacts', { email: 'cy@example.com', subscribed: true });
    expect(created.status).toBe(201);
    const contact = { id: created.body.id as string, email: 'cy@example.com' };

    expect((await api(project).patch(`/contacts/${contact.id}`, { subscribed: false })).status).toBe(200);
    const unsubscribed = await messageOf(hook, 'contact.unsubscribed');
    await expectPayload(stack, hook, unsubscribed.payload, { source: 'system', contact });

    expect((await api(project).patch(`/contacts/${contact.id}`, { subscribed: true })).status).toBe(200);
    const subscribed = await messageOf(hook, 'contact.subscribed');
    await expectPayload(stack, hook, subscribed.payload, { source: 'system', contact });
    // One message per event: each has its own webhook-id.
    expect(subscribed.request.headers['webhook-id']).not.toBe(unsubscribed.request.headers['webhook-id']);
  });
});

describe('tracked segments', () => {
  it('segment.<slug>.entry when a contact joins, segment.<slug>.exit when it leaves', async () => {
    const { project, hook } = await newHook();
    const segment = await api(project).post('/segments', {
      name: 'Pro users',
      trackMembership: true,
      condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    });
    expect(segment.status).toBe(201);
    expect(segment.body.slug).toBe('pro-users');

    const created = await api(project).post('/contacts', { email: 'di@example.com', data: { plan: 'pro' } });
    expect(created.status).toBe(201);
    const contact = { id: created.body.id as string, email: 'di@example.com' };
    const entry = await messageOf(hook, 'segment.pro-users.entry');
    await expectPayload(stack, hook, entry.payload, { source: 'system', contact });

    expect((await api(project).patch(`/contacts/${contact.id}`, { data: { plan: 'free' } })).status).toBe(200);
    const exit = await messageOf(hook, 'segment.pro-users.exit');
    await expectPayload(stack, hook, exit.payload, { source: 'system', contact });
  });
});
