import os from 'node:os';
import { startTestStack, startStackWorker, type TestStack } from '../support/testStack';
import type { ChildService } from '../support/processes';
import { accountWithProject } from '../support/accounts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { eventually } from '../support/eventually';
import { createEndpoint } from '../support/webhookEndpoints';

/**
 * Outbound webhooks are durable (contract 18, at least once): the worker delivering an endpoint's
 * backlog is SIGKILLed half way, and every message still arrives; the only repeats are attempts
 * that were in flight at the kill (at most WEBHOOK_ENDPOINT_CONCURRENCY). The workers run as
 * `npm start` runs them: a `main` worker holding the workflows, and webhook delivery in a
 * `webhooks` process of its own at WEBHOOK_WORKER_NICE, which is the one killed.
 */
const WORKER_START_MS = 120_000;
const MESSAGES = 500;
const CONCURRENCY = 10;
const WORKER_ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_ENDPOINT_CONCURRENCY: String(CONCURRENCY) };

let stack: TestStack;
let receiver: WebhookReceiver;
const workers: ChildService[] = [];

beforeAll(async () => {
  stack = await startTestStack({ worker: false, env: WORKER_ENV });
  receiver = await startWebhookReceiver();
}, 180_000);

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await receiver?.close();
  await stack?.stop();
});

async function startWorker(role: 'main' | 'webhooks'): Promise<ChildService> {
  const worker = await startStackWorker(stack, { ...WORKER_ENV, WORKER_ROLE: role }, WORKER_START_MS);
  workers.push(worker);
  return worker;
}

async function statuses(endpointId: string): Promise<Record<string, number>> {
  const rows: Array<{ status: string; n: number }> = await stack.orm.em
    .fork()
    .execute(`select status, count(*)::int as n from webhook_messages where endpoint_id = ? group by status`, [endpointId]);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

it('delivers every pending message though the worker is SIGKILLed while delivering them', async () => {
  const { project } = await accountWithProject(stack.http);
  // Slow enough that the kill lands with the backlog half delivered.
  receiver.on('/durable', (_req, res) => setTimeout(() => res.writeHead(200).end(), 20));
  const endpoint = await createEndpoint(stack, project, `${receiver.url}/durable`, ['*']);

  // No worker runs yet: every message is written with its event and waits.
  for (let i = 0; i < MESSAGES; i++) {
    const res = await stack.http.post('/v1/track', { event: 'durable.event', email: `user-${i}@example.com` }, { key: project.publicKey });
    expect(res.status).toBe(200);
  }
  expect(await statuses(endpoint.id)).toEqual({ PENDING: MESSAGES });

  await startWorker('main');
  const first = await startWorker('webhooks');
  // Behind mail and the API on shared cores.
  expect(os.getPriority(first.process.pid)).toBe(19);
  await eventually(() => expect(receiver.requests.length).toBeGreaterThanOrEqual(50), 120_000, 10);
  first.kill('SIGKILL');
  await first.exited;
  const receivedAtKill = receiver.requests.length;

  await startWorker('webhooks');
  await eventually(async () => expect(await statuses(endpoint.id)).toEqual({ SUCCEEDED: MESSAGES }), 180_000, 500);

  const ids = receiver.requests.map((r) => String(r.headers['webhook-id']));
  expect(new Set(ids).size).toBe(MESSAGES);
  // Repeats only for attempts in flight at the kill.
  expect(ids.length - MESSAGES).toBeLessThanOrEqual(CONCURRENCY);
  // Whether the kill caught the backlog half way is timing; that nothing was lost is the point.
  expect(receivedAtKill).toBeLessThanOrEqual(MESSAGES + CONCURRENCY);
}, 420_000);
