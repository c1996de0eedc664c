/**
 * The worker's main and delivery Workers run their workflows on one workflow thread
 * (worker/createWorker.ts): the SDK would give each a thread and V8 isolate of its own, ~28 MiB of
 * the worker's resident memory more. Both queues are still served: a send's delivery workflow runs
 * on the delivery queue, the delivery sweep on the main one.
 */
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';

jest.setTimeout(120_000);

// The SDK starts its workflow threads through this module's Worker, read when it starts one.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the module object itself, whose Worker is wrapped
const workerThreads: typeof import('node:worker_threads') = require('node:worker_threads');
const OriginalWorker = workerThreads.Worker;
const threadFiles: string[] = [];

let stack: TestStack;
beforeAll(async () => {
  (workerThreads as { Worker: unknown }).Worker = class extends OriginalWorker {
    constructor(filename: string | URL, options?: import('node:worker_threads').WorkerOptions) {
      super(filename, options);
      threadFiles.push(String(filename));
    }
  };
  try {
    stack = await startTestStack();
  } finally {
    (workerThreads as { Worker: unknown }).Worker = OriginalWorker;
  }
});
afterAll(() => stack?.stop());

describe('the workflow thread of a worker', () => {
  it('is one for the main and the delivery queue, and both queues run their workflows', async () => {
    expect(threadFiles.filter((file) => file.includes('workflow-worker-thread'))).toHaveLength(1);

    const { project } = await accountWithProject(stack.http);
    const sent = await stack.http.post(
      '/v1/send',
      { to: 'reader@example.com', from: `hello@${OUTBOX_SENDER_DOMAIN}`, subject: 'One thread', body: '<p>Hello</p>' },
      { key: project.secretKey },
    );
    expect(sent.status).toBe(200);
    // Delivered by the delivery queue's workflow.
    await eventually(async () => {
      const list = await stack.http.get('/outbox', { key: project.secretKey });
      expect(list.body.data.map((m: { subject: string }) => m.subject)).toContain('One thread');
    }, 60_000);
    // A workflow of the main queue ran to its end on the same thread.
    const sweep = await stack.temporal.workflow.execute('emailDeliverySweepWorkflow', {
      taskQueue: stack.config.temporalTaskQueue,
      workflowId: `sweep-${project.id}`,
      args: [],
    });
    expect(sweep).toEqual({ started: 0, alreadyRunning: 0 });
  });
});
