import type { EmailDeliveryActivities } from '../../../activities/emailDeliveryActivities';
import type { EmailDeliverySummary, emailDeliveryWorkflow } from '../../../workflows/emailDeliveryWorkflow';
import { startFastTemporal, type FastTemporal } from '../support/temporalEnvironment';

/** emailDeliveryWorkflow: attempts, the waits between them (the input's retryDelaysSeconds), giving up. */
let temporal: FastTemporal<EmailDeliveryActivities>;
beforeAll(async () => {
  temporal = await startFastTemporal<EmailDeliveryActivities>({ activities: ['deliverEmails', 'failUndeliveredEmails'] });
});
afterAll(async () => {
  await temporal?.teardown();
});

type Attempt = Awaited<ReturnType<EmailDeliveryActivities['deliverEmails']>>;

/**
 * Stand-ins answering each attempt by the emails it is given (attempts run as local activities, and
 * one repeated on a busy machine gets the same answer); `calls` records each attempt once.
 */
function standIns(attempts: Record<string, Partial<Attempt>>) {
  const deliver = new Map<string, string[]>();
  const calls = {
    get deliver() {
      return [...deliver.values()];
    },
    failed: [] as Array<{ emailIds: string[]; reason: string }>,
  };
  temporal.standIns({
    async deliverEmails(input) {
      deliver.set(input.emailIds.join(), input.emailIds);
      return { sent: 0, failed: 0, suppressed: 0, retry: [], ...attempts[input.emailIds.join()] };
    },
    async failUndeliveredEmails(input) {
      calls.failed.push(input);
    },
  });
  return calls;
}

let runs = 0;
const deliver = (retryDelaysSeconds: number[], emailIds = ['e1', 'e2', 'e3']): Promise<EmailDeliverySummary> =>
  temporal.client.workflow.execute<typeof emailDeliveryWorkflow>('emailDeliveryWorkflow', {
    taskQueue: temporal.taskQueue,
    workflowId: `deliver-${++runs}`,
    args: [{ projectId: 'p1', emailIds, retryDelaysSeconds }],
  });

it('delivers in one attempt when nothing fails temporarily', async () => {
  const calls = standIns({ 'e1,e2,e3': { sent: 2, suppressed: 1 } });
  await expect(deliver([60])).resolves.toEqual({ sent: 2, failed: 0, suppressed: 1, attempts: 1 });
  expect(calls.deliver).toEqual([['e1', 'e2', 'e3']]);
  expect(calls.failed).toEqual([]);
});

it('waits out the next delay and sends again only what failed temporarily', async () => {
  const calls = standIns({ 'e1,e2,e3': { sent: 1, retry: ['e2', 'e3'] }, 'e2,e3': { sent: 1, failed: 1 } });
  const started = Date.now();
  await expect(deliver([0.3, 60])).resolves.toEqual({ sent: 2, failed: 1, suppressed: 0, attempts: 2 });
  expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  expect(calls.deliver).toEqual([
    ['e1', 'e2', 'e3'],
    ['e2', 'e3'],
  ]);
});

it('marks what still fails FAILED once the delays are spent', async () => {
  const calls = standIns({ 'e1,e2,e3': { sent: 1, retry: ['e1', 'e3'] }, 'e1,e3': { retry: ['e3'] } });
  await expect(deliver([0.05])).resolves.toEqual({ sent: 1, failed: 1, suppressed: 0, attempts: 2 });
  expect(calls.failed).toEqual([{ emailIds: ['e3'], reason: 'Delivery failed temporarily 2 times; giving up' }]);
});
