import crypto from 'node:crypto';
import type { TestStack } from './testStack';
import type { TestProject } from './accounts';
import type { ReceivedRequest, WebhookReceiver } from './webhookReceiver';
import { createEndpoint, signedWith, type TestEndpoint } from './webhookEndpoints';
import { eventually } from './eventually';

/**
 * Outbound webhook messages (contract 18) as a receiver sees them: an endpoint per test at its own
 * path of a shared receiver, the message of one event type found among what arrived, its signature
 * checked, and its payload compared with the event as GET /events reports it.
 */
export interface TestHook extends TestEndpoint {
  path: string;
  receiver: WebhookReceiver;
  project: TestProject;
}

export interface WebhookPayload {
  type: string;
  timestamp: string;
  source: 'system' | 'tracked';
  data: {
    event: { id: string; name: string; createdAt: string; data: unknown };
    contact: { id: string; email: string } | null;
    email?: { id: string; subject: string | null; campaignId: string | null; templateId: string | null } | null;
  };
}

/** An endpoint of `project` through the API, taking `events` (every event by default) at a path of its own. */
export async function hookFor(stack: TestStack, receiver: WebhookReceiver, project: TestProject, events: string[] = ['*']): Promise<TestHook> {
  const path = `/hooks/${crypto.randomUUID()}`;
  const endpoint = await createEndpoint(stack, project, `${receiver.url}${path}`, events);
  return { ...endpoint, path, receiver, project };
}

/** What the hook has received so far, parsed. */
export function payloadsOf(hook: TestHook): Array<{ request: ReceivedRequest; payload: WebhookPayload }> {
  return hook.receiver.requests.filter((r) => r.path === hook.path).map((request) => ({ request, payload: JSON.parse(request.body) as WebhookPayload }));
}

/**
 * The first message of `type` (and `match`) the hook receives, once it has arrived: a POST of JSON
 * that the endpoint's secret signs, with the Standard Webhooks headers.
 */
export async function messageOf(
  hook: TestHook,
  type: string,
  match: (payload: WebhookPayload) => boolean = () => true,
  timeoutMs = 30_000,
): Promise<{ request: ReceivedRequest; payload: WebhookPayload }> {
  const found = await eventually(() => {
    const all = payloadsOf(hook);
    const hit = all.find(({ payload }) => payload.type === type && match(payload));
    if (!hit) throw new Error(`no ${type} message at ${hook.path}; received: ${all.map(({ payload }) => payload.type).join(', ') || 'nothing'}`);
    return hit;
  }, timeoutMs);
  expect(found.request.method).toBe('POST');
  expect(found.request.headers['content-type']).toBe('application/json');
  expect(found.request.headers['user-agent']).toBe('Mailroom-Webhooks/1');
  expect(found.request.headers['webhook-id']).toEqual(expect.any(String));
  expect(found.request.headers['webhook-timestamp']).toMatch(/^\d+$/);
  expect(signedWith(found.request, hook.secret)).toBe(true);
  return found;
}

export interface ExpectedPayload {
  source: 'system' | 'tracked';
  contact: { id: string; email: string } | null;
  /** For email.* events: the email the event is about. */
  email?: { id: string; subject: string | null; campaignId?: string | null; templateId?: string | null } | null;
}

/**
 * Checks a payload's shape and contents: the type, source, contact and email expected, and its
 * `data.event` the very event GET /events lists (id, name, data, time; the email it names).
 */
export async function expectPayload(stack: TestStack, hook: TestHook, payload: WebhookPayload, expected: ExpectedPayload): Promise<void> {
  const type = payload.type;
  const email = expected.email ? { campaignId: null, templateId: null, ...expected.email } : expected.email;
  expect(payload).toEqual({
    type,
    timestamp: payload.data.event.createdAt,
    source: expected.source,
    data: {
      event: {
        id: expect.any(String),
        name: type,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        data: payload.data.event.data,
      },
      contact: expected.contact,
      ...(type.startsWith('email.') ? { email: email ?? null } : {}),
    },
  });
  // Present even when empty (null), as GET /events has it.
  expect(payload.data.event).toHaveProperty('data');
  const listed = await stack.http.get(`/events?name=${encodeURIComponent(type)}&limit=100`, { key: hook.project.secretKey });
  expect(listed.status).toBe(200);
  const recorded = listed.body.data.find((e: { id: string }) => e.id === payload.data.event.id);
  expect(recorded).toMatchObject({
    name: type,
    contactId: expected.contact?.id ?? null,
    source: expected.source === 'system' ? 'SYSTEM' : 'API',
    data: payload.data.event.data,
  });
  if (type.startsWith('email.')) expect(recorded.emailId).toBe(email?.id);
  // The API and the payload write the same instant (each to the millisecond).
  expect(Math.abs(Date.parse(recorded.createdAt) - Date.parse(payload.data.event.createdAt))).toBeLessThanOrEqual(1);
}
