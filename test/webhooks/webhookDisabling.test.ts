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
  // Fails, then recovers before the time is up: its clock stops.
  receiver.on('/flaky', (_req, res) => res.writeHead(++calls <= 2 ? 503 : 200).end());
  const down = await createEndpoint(stack, project, `${receiver.url}/down`, ['*']);
  const flaky = await createEndpoint(stack, project, `${receiver.url}/flaky`, ['*']);
  const track = () => stack.http.post('/v1/track', { event: 'health.check', email: 'ada@example.com' }, { key: project.publicKey });
  expect((await track()).status).toBe(200);

  const disabled = await eventually(
    async () => {
      const res = await stack.http.get(`/webhook-endpoints/${down.id}`, { key: project.secretKey });
      if (res.body.enabled) throw new Error('still enabled');
      return res.body;
    },
    30_000,
    200,
  );
  expect(disabled.disabledReason).toMatch(/failed for 0\.001 hours/);
  // Its workflow ends by itself once the endpoint is disabled.
  expect(await stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(down.id)).result()).toBe('disabled');

  // The recovered endpoint: its message succeeded, and later failures start a new clock.
  await eventually(async () => {
    const res = await stack.http.get(`/webhook-endpoints/${flaky.id}/messages`, { key: project.secretKey });
    expect(res.body.data[0]?.status).toBe('SUCCEEDED');
  });
  const flakyNow = await stack.http.get(`/webhook-endpoints/${flaky.id}`, { key: project.secretKey });
  expect(flakyNow.body).toMatchObject({ enabled: true, disabledReason: null });
}, 60_000);
