import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { eventually } from '../support/eventually';
import { createEndpoint } from '../support/webhookEndpoints';
import { webhookDeliveryWorkflowId } from '../../temporal/webhookDeliveryStart';

/**
 * Contract 18: an endpoint whose attempts have all failed for WEBHOOK_DISABLE_AFTER_HOURS is
 * disabled with a reason (here 0.001 h, 3.6 s, with retries every second); one success stops the clock.
 */
const DISABLE_AFTER_MS = 0.001 * 3600 * 1000;
let stack: TestStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack({
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_DISABLE_AFTER_HOURS: '0.001', WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,1,1,1,1,1' },
  });
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

it('disables an endpoint after failing for the set time, ends its workflow, and leaves one that recovers enabled', async () => {
  const { project } = await accountWithProject(stack.http);
  receiver.on('/down', (_req, res) => res.writeHead(503).end());
  let calls = 0;
  // Each message fails once, then its retry succeeds: the first message starts the clock and stops it.
  receiver.on('/flaky', (_req, res) => res.writeHead(++calls % 2 === 1 ? 503 : 200).end());
  const down = await createEndpoint(stack, project, `${receiver.url}/down`, ['*']);
  const flaky = await createEndpoint(stack, project, `${receiver.url}/flaky`, ['*']);
  const track = () => stack.http.post('/v1/track', { event: 'health.check', email: 'ada@example.com' }, { key: project.publicKey });
  const flakyMessages = async () =>
    (await stack.http.get(`/webhook-endpoints/${flaky.id}/messages`, { key: project.secretKey })).body.data as Array<{ status: string }>;
  const flakyRequests = () => receiver.requests.filter((r) => r.path === '/flaky').length;
  expect((await track()).status).toBe(200);

  // The flaky endpoint's message failed (its clock started), then succeeded (the clock stopped), before now.
  await eventually(async () => expect((await flakyMessages())[0]?.status).toBe('SUCCEEDED'), 60_000);
  const clockStoppedBy = Date.now();

  // Eleven attempts a second or more apart fail for 10 s at least: well past 3.6 s, however slow the machine.
  const disabled = await eventually(
    async () => {
      const res = await stack.http.get(`/webhook-endpoints/${down.id}`, { key: project.secretKey });
      if (res.body.enabled) throw new Error('still enabled');
      return res.body;
    },
    60_000,
    200,
  );
  expect(disabled.disabledReason).toMatch(/failed for 0\.001 hours/);
  // Its workflow ends by itself once the endpoint is disabled.
  expect(await stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(down.id)).result()).toBe('disabled');

  // A failure more than the set time after the flaky endpoint's first one would disable it, had its
  // clock run on; the success stopped it, so this failure starts a new one.
  await new Promise((r) => setTimeout(r, Math.max(0, clockStoppedBy + DISABLE_AFTER_MS + 1000 - Date.now())));
  expect(flakyRequests()).toBe(2);
  expect((await track()).status).toBe(200);
  // Its retry is sent only by a run that the failure did not stop, to an endpoint still enabled.
  await eventually(() => expect(flakyRequests()).toBe(4), 60_000);
  await eventually(async () => expect((await flakyMessages()).map((m) => m.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']), 60_000);
  const flakyNow = await stack.http.get(`/webhook-endpoints/${flaky.id}`, { key: project.secretKey });
  expect(flakyNow.body).toMatchObject({ enabled: true, disabledReason: null });
}, 240_000);
