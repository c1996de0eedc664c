import crypto from 'node:crypto';
import { tsToMs } from '@temporalio/common/lib/time';
import { startTestStack, type TestStack, startStackWorker } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import type { ChildService } from '../support/processes';
import { eventually } from '../support/eventually';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestProject } from '../support/accounts';
import { chain, insertWorkflow } from './workflowDefinitionRows';

/**
 * Executions run in a real worker process killed with SIGKILL while they wait in DELAY and in
 * WAIT_FOR_EVENT (the awaited events arrive while no worker runs); a new worker picks them up and
 * every one finishes, each mail sent once. A loop through a DELAY crosses several runs
 * (continue-as-new) without losing its place.
 */
const WORKER_START_MS = 120_000;
const CONTACTS = 5;
/**
 * The DELAY of the executions the kill interrupts: it must outlast what the test does between the
 * DELAYs starting and the kill (a few tracks, polls and histories: seconds when idle, many times
 * that on a loaded machine), then it runs out while no worker runs.
 */
const DELAY_MS = 45_000;
jest.setTimeout(300_000 + DELAY_MS);

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
let project: TestProject;
let domain: string;
const workers: ChildService[] = [];

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ worker: false, env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url } });
  ({ project, domain } = await projectWithVerifiedDomain(stack, dns));
});

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

async function startWorker(): Promise<ChildService> {
  const worker = await startStackWorker(
    stack,
    {
      SMTP_URL: smtp.url,
      // Continue as new every couple of steps: a looping execution must cross runs without losing its place.
      EXECUTION_HISTORY_EVENTS: '40',
    },
    WORKER_START_MS,
  );
  workers.push(worker);
  return worker;
}

async function killed(worker: ChildService) {
  worker.kill('SIGKILL');
  await worker.exited;
}

const unique = (prefix: string) => `${prefix}-${crypto.randomBytes(4).toString('hex')}`;
const key = () => ({ key: project.secretKey });

async function template(subject: string): Promise<string> {
  const res = await stack.http.post(
    '/templates',
    { name: unique('t'), subject, body: '<p>Hello {{firstName}}</p>', from: `hello@${domain}`, type: 'TRANSACTIONAL' },
    key(),
  );
  expect(res.status).toBe(201);
  return res.body.id;
}

async function track(email: string, event: string, data?: Record<string, unknown>) {
  const res = await stack.http.post('/v1/track', { email, event, ...(data ? { data } : {}) }, { key: project.publicKey });
  expect(res.status).toBe(200);
  return res.body.data as { contact: string; event: string };
}

const executionIds = async (workflowId: string) => {
  const list = (await stack.http.get(`/workflows/${workflowId}/executions?pageSize=100`, key())).body;
  return list.data.map((e: any) => e.id as string);
};

const statuses = async (workflowId: string) => {
  const list = (await stack.http.get(`/workflows/${workflowId}/executions?pageSize=100`, key())).body;
  return list.data.map((e: any) => e.status as string);
};

it('executions waiting in DELAY and WAIT_FOR_EVENT survive a killed worker and finish once', async () => {
  let worker = await startWorker();
  const first = await template('First {{firstName}}');
  const second = await template('Second {{firstName}}');
  const delayedEvent = unique('delayed');
  const orderedEvent = unique('ordered');
  const delayed = await insertWorkflow(stack, project.id, {
    eventName: delayedEvent,
    steps: [
      { key: 'first', type: 'SEND_EMAIL', config: { templateId: first }, templateId: first },
      { key: 'pause', type: 'DELAY', config: { amount: DELAY_MS / 60_000, unit: 'minutes' } },
      { key: 'second', type: 'SEND_EMAIL', config: { templateId: second }, templateId: second },
    ],
    transitions: chain('first', 'pause', 'second'),
  });
  const paidEvent = unique('paid');
  const waiting = await insertWorkflow(stack, project.id, {
    eventName: orderedEvent,
    steps: [
      { key: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: paidEvent, timeout: 600 } },
      { key: 'thanks', type: 'SEND_EMAIL', config: { templateId: second }, templateId: second },
      { key: 'late', type: 'EXIT' },
    ],
    transitions: [
      { from: 'trigger', to: 'wait' },
      { from: 'wait', to: 'thanks', waitOutcome: 'EVENT' },
      { from: 'wait', to: 'late', waitOutcome: 'TIMEOUT' },
    ],
  });

  const delayedEmails = Array.from({ length: CONTACTS }, (_, i) => `${unique(`d${i}`)}@example.org`);
  const waitingEmails = Array.from({ length: CONTACTS }, (_, i) => `${unique(`w${i}`)}@example.org`);
  // Every wait is on a Temporal timer (the DELAY, the WAIT_FOR_EVENT's timeout) before the kill.
  const history = async (executionId: string) => (await stack.temporal.workflow.getHandle(`execution-${executionId}`).fetchHistory()).events ?? [];
  const onTimers = (workflowId: string) =>
    eventually(async () => {
      for (const executionId of await executionIds(workflowId)) {
        if (!(await history(executionId)).some((e) => e.timerStartedEventAttributes)) throw new Error(`execution ${executionId} waits on no timer yet`);
      }
    }, 60_000);
  // The executions that wait for an event start first and are seen waiting; the DELAYs last, so
  // that as little as possible happens between their start and the kill: still running at it.
  for (const email of waitingEmails) await track(email, orderedEvent, { firstName: 'Wai' });
  await eventually(async () => expect(await statuses(waiting.id)).toEqual(Array(CONTACTS).fill('WAITING')), 60_000);
  await onTimers(waiting.id);
  for (const email of delayedEmails) await track(email, delayedEvent, { firstName: 'Del' });
  await eventually(async () => expect(await statuses(delayed.id)).toEqual(Array(CONTACTS).fill('WAITING')), 60_000);
  await onTimers(delayed.id);

  await killed(worker);
  const killedAt = Date.now();
  // While no worker runs: the awaited events arrive (signals wait in Temporal), the DELAYs run out.
  for (const email of waitingEmails) await track(email, paidEvent);
  // Both are facts in the runs' histories before a worker starts again: every DELAY's timer has
  // fired, and every waiting run has been signalled.
  const delays = await eventually(
    async () => {
      const timers: Array<{ executionId: string; dueAt: number }> = [];
      for (const executionId of await executionIds(delayed.id)) {
        const events = await history(executionId);
        const timer = events.filter((e) => e.timerStartedEventAttributes).pop();
        if (!timer) throw new Error(`execution ${executionId} has no timer`);
        const dueAt = tsToMs(timer.eventTime) + tsToMs(timer.timerStartedEventAttributes!.startToFireTimeout);
        const fired = events.some((e) => e.timerFiredEventAttributes && String(e.timerFiredEventAttributes.startedEventId) === String(timer.eventId));
        if (!fired) throw new Error(`the DELAY of execution ${executionId}, due at ${new Date(dueAt).toISOString()}, has not fired yet`);
        timers.push({ executionId, dueAt });
      }
      for (const executionId of await executionIds(waiting.id)) {
        const events = await history(executionId);
        if (!events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'eventArrived'))
          throw new Error(`execution ${executionId} has not been signalled yet`);
      }
      return timers;
    },
    // The DELAYs, started before the kill, run out within DELAY_MS of it.
    DELAY_MS + 60_000,
    1_000,
  );
  // The DELAYs were due after the kill: they ran out while no worker ran, not before.
  expect(delays).toHaveLength(CONTACTS);
  for (const { dueAt } of delays) expect(dueAt).toBeGreaterThan(killedAt);
  worker = await startWorker();

  await eventually(async () => expect(await statuses(delayed.id)).toEqual(Array(CONTACTS).fill('COMPLETED')), 90_000);
  await eventually(async () => expect(await statuses(waiting.id)).toEqual(Array(CONTACTS).fill('COMPLETED')), 90_000);
  for (const email of delayedEmails) {
    expect(
      smtp.messages
        .filter((m) => m.envelopeTo[0] === email)
        .map((m) => m.parsed.subject)
        .sort(),
    ).toEqual(['First Del', 'Second Del']);
  }
  for (const email of waitingEmails) {
    expect(smtp.messages.filter((m) => m.envelopeTo[0] === email).map((m) => m.parsed.subject)).toEqual(['Second Wai']);
  }
  await killed(worker);
});

it('a loop through a DELAY crosses runs (continue-as-new) and leaves when the contact changes', async () => {
  const worker = await startWorker();
  const event = unique('loop');
  const wf = await insertWorkflow(stack, project.id, {
    eventName: event,
    steps: [
      { key: 'tick', type: 'DELAY', config: { amount: 0.005, unit: 'minutes' } },
      { key: 'done', type: 'CONDITION', config: { field: 'data.stop', operator: 'exists' } },
      { key: 'leave', type: 'EXIT', config: { reason: 'stopped' } },
    ],
    transitions: [
      { from: 'trigger', to: 'tick' },
      { from: 'tick', to: 'done' },
      { from: 'done', to: 'tick', branch: 'no' },
      { from: 'done', to: 'leave', branch: 'yes' },
    ],
  });
  const tracked = await track(`${unique('looper')}@example.org`, event);
  const executionId = await eventually(async () => {
    const list = (await stack.http.get(`/workflows/${wf.id}/executions`, key())).body;
    if (list.data.length !== 1) throw new Error('not yet');
    return list.data[0].id as string;
  });
  // Several runs: the first ones ended by continuing as new.
  await eventually(
    async () => {
      let runs = 0;
      for await (const _run of stack.temporal.workflow.list({ query: `WorkflowId = "execution-${executionId}"` })) runs++;
      expect(runs).toBeGreaterThanOrEqual(3);
    },
    60_000,
    500,
  );
  await stack.http.patch(`/contacts/${tracked.contact}`, { data: { stop: true } }, key());
  const done = await eventually(async () => {
    const execution = (await stack.http.get(`/workflows/${wf.id}/executions/${executionId}`, key())).body;
    if (execution.status !== 'EXITED') throw new Error(execution.status);
    return execution;
  }, 30_000);
  expect(done.exitReason).toBe('stopped');
  // The walk's positions go on across runs: one history row per position, in order.
  expect(done.steps.map((s: any) => s.sequence)).toEqual(done.steps.map((_: unknown, i: number) => i));
  expect(done.steps.length).toBeGreaterThan(6);
  await killed(worker);
});
