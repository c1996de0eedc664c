import crypto from 'node:crypto';
import { defineSearchAttributeKey } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time';
import { startTestStack, startStackWorker, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';
import type { ChildService } from '../support/processes';
import { startWorkflow, WorkflowStartError, SEARCH_ATTRIBUTE_PROPAGATION_MS } from '../../temporal/startWorkflow';
import { mailroomSearchAttributes } from '../../temporal/searchAttributes';

/**
 * Ready means ready: on a namespace nobody prepared (created while the API waits for it, its search
 * attributes registered by Mailroom's start-up; under `npm run test:cluster` on a real self-hosted
 * Temporal server on PostgreSQL),
 * /health answers `ok` only once a workflow start succeeds (not merely once Temporal answers),
 * and the first import right after that is accepted. A start refused because an attribute has not reached the namespace yet is
 * tried again for a bounded time rather than answered 500.
 */
jest.setTimeout(180_000);

const namespace = `mailroom-fresh-${crypto.randomBytes(4).toString('hex')}`;
let stack: TestStack;
let worker: ChildService | undefined;

beforeAll(async () => {
  // The namespace does not exist yet: the API starts and waits for it.
  stack = await startTestStack({ worker: false, env: { TEMPORAL_NAMESPACE: namespace, TEMPORAL_CREATE_NAMESPACE: 'false' } });
});
afterAll(async () => {
  worker?.kill('SIGKILL');
  await stack?.stop();
});

it('answers /health ok only once starts succeed, and accepts the first import right after', async () => {
  const { project } = await accountWithProject(stack.http);
  // Temporal answers, but no start can succeed yet: not ready.
  await eventually(() =>
    expect(stack.logs.some((l) => typeof l.msg === 'string' && l.msg.includes(`waiting for Temporal namespace "${namespace}"`))).toBe(true),
  );
  const waiting = await stack.http.get('/health');
  expect({ status: waiting.status, body: waiting.body }).toEqual({ status: 200, body: { status: 'degraded', database: 'ok', temporal: 'down' } });
  expect(await stack.api.temporal.isReachable()).toBe(true);

  // An operator creates the namespace, nothing else: Mailroom registers its attributes.
  await stack.temporal.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  const answers: string[] = [];
  await eventually(
    async () => {
      const res = await stack.http.get('/health');
      answers.push(res.body.status);
      expect(res.body.status).toBe('ok');
    },
    120_000,
    50,
  );
  // The very next request starts a workflow carrying ProjectId.
  const upload = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: 'first.csv', content: 'email\nfirst@example.com' });
  expect({ status: upload.status, body: upload.body }).toMatchObject({ status: 202 });

  // Nobody but this API registered the attributes, and it did so before it said it was ready.
  const registered = stack.logs.find((l) => l.event === 'temporal.search_attributes_registered' && l.namespace === namespace);
  expect(registered?.searchAttributes).toEqual(mailroomSearchAttributes.map((k) => k.name));
  // eslint-disable-next-line no-console -- for the person reading the run
  console.log(`namespace ${namespace}: /health answered ${answers.filter((s) => s !== 'ok').length} times degraded before ok`);

  // And the import runs once a worker polls the namespace.
  worker = await startStackWorker(stack, { TEMPORAL_NAMESPACE: namespace }, 120_000);
  await eventually(
    async () => {
      const job = (await stack.http.get(`/contacts/import/${upload.body.jobId}`, { key: project.secretKey })).body;
      expect(job).toMatchObject({ status: 'COMPLETED', processed: 1, succeeded: 1 });
    },
    60_000,
    200,
  );
});

describe('a start refused for a search attribute the namespace does not map', () => {
  const nobodyPolls = `nobody-${crypto.randomBytes(4).toString('hex')}`;
  const startNaming = (attribute: string) =>
    startWorkflow(stack.api.temporal, 'hourlyCleanupWorkflow', {
      workflowId: `probe-${crypto.randomBytes(4).toString('hex')}`,
      taskQueue: nobodyPolls,
      typedSearchAttributes: [{ key: defineSearchAttributeKey(attribute, 'KEYWORD'), value: 'x' }],
      workflowExecutionTimeout: '1 minute',
    });

  it('is tried again until the attribute arrives', async () => {
    const attribute = `MailroomLate${crypto.randomBytes(3).toString('hex')}`;
    const startedAt = Date.now();
    const starting = startNaming(attribute);
    // The attribute arrives while the start is being refused (the refusal is Temporal's own).
    await eventually(() => {
      if (Date.now() - startedAt < 2000) throw new Error('not yet');
    });
    await stack.api.temporal.connection.operatorService.addSearchAttributes({ namespace, searchAttributes: { [attribute]: 2 } });
    await starting;
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2000);
  });

  it('is a refusal for the operator (500, not "try again") once the propagation time is over', async () => {
    const startedAt = Date.now();
    const error = await startNaming(`MailroomNever${crypto.randomBytes(3).toString('hex')}`).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(WorkflowStartError);
    expect(error).toMatchObject({ retryable: false, reason: expect.stringMatching(/no mapping defined for search attribute MailroomNever/) });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(SEARCH_ATTRIBUTE_PROPAGATION_MS - 2500);
  });
});
