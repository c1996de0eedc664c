import { deliverySweepScheduleId } from '../../worker/schedules';
import { startTestStack, startStackWorker, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import type { ChildService } from '../support/processes';
import type { TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { listRuns, projectDeliveriesClosed, triggerScheduleRun } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';

/**
 * What a /v1/send client sees when its delivery workflow fails to start after its emails were
 * committed: the answer came at the commit (contract 9), so it is 200 whatever Temporal does, and
 * the mail is sent once Temporal is back, once: by the workflow that did start (its answer lost),
 * or by the delivery sweep (the start never arrived). The API reaches Temporal through a proxy the
 * tests cut; the worker and the tests' client do not.
 */
const WORKER_START_MS = 120_000;

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let proxy: TcpProxy;
let stack: TestStack;
let worker: ChildService | undefined;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  proxy = await startTcpProxy(process.env.MAILROOM_TEST_TEMPORAL_ADDRESS!);
  stack = await startTestStack({
    worker: false,
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' },
    apiEnv: { TEMPORAL_ADDRESS: proxy.address },
  });
  await eventually(() => stack.logs.some((l) => l.event === 'temporal.ready'), 30_000);
});

afterAll(async () => {
  worker?.kill('SIGKILL');
  await worker?.exited;
  await stack?.stop();
  await proxy?.close();
  await smtp?.close();
  await dns?.close();
});

const send = (project: TestProject, domain: string, to: string, headers: Record<string, string> = {}) =>
  stack.http.post('/v1/send', { to, from: `hello@${domain}`, subject: `For ${to}`, body: '<p>Hi</p>' }, { key: project.secretKey, headers });

const received = (to: string) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length;

async function recorded(projectId: string): Promise<{ emails: number; queued: number; counted: number }> {
  const [row] = await stack.orm.em.fork().execute<Array<{ emails: number; queued: number; counted: number }>>(
    `select (select count(*)::int from emails where project_id = ?) as emails,
            (select count(*)::int from emails where project_id = ? and status = 'QUEUED' and attempts = 0) as queued,
            (select coalesce(sum(used), 0)::int from billing_usage where project_id = ?) as counted`,
    [projectId, projectId, projectId],
  );
  return row;
}

const startFailed = (projectId: string) => () =>
  stack.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('could not start a delivery workflow') && l.projectId === projectId);

describe('a delivery start that fails after the emails were committed', () => {
  let unreachable: { project: TestProject; domain: string };
  let answerLost: { project: TestProject; domain: string };

  it('Temporal unreachable: 200 at once, the emails recorded and counted, the failed start logged, the Idempotency-Key settled at 200', async () => {
    unreachable = await projectWithVerifiedDomain(stack, dns);
    proxy.setMode('refuse');
    try {
      const res = await send(unreachable.project, unreachable.domain, 'unreachable@example.org', { 'Idempotency-Key': 'while-away' });
      expect(res.body.error ?? null).toBeNull();
      expect(res.status).toBe(200);
      // The start gives up at its deadline, after the answer; the mail waits for the sweep.
      await eventually(startFailed(unreachable.project.id), 30_000);
    } finally {
      proxy.setMode('pass');
    }
    expect(await recorded(unreachable.project.id)).toEqual({ emails: 1, queued: 1, counted: 1 });
    const again = await send(unreachable.project, unreachable.domain, 'unreachable@example.org', { 'Idempotency-Key': 'while-away' });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject({ originalStatusCode: 200 });
  });

  it('the start reached Temporal but its answer was lost: 200, and the workflow that did start exists', async () => {
    answerLost = await projectWithVerifiedDomain(stack, dns);
    // An answered send first, so the API's connection is open when the answers start getting lost.
    expect((await send(answerLost.project, answerLost.domain, 'before-loss@example.org')).status).toBe(200);
    await eventually(async () => (await listRuns(stack.temporal, `ProjectId = "${answerLost.project.id}"`)).length === 1, 30_000);
    proxy.setMode('loseAnswers');
    try {
      // No worker runs yet: nothing claims the email meanwhile.
      expect((await send(answerLost.project, answerLost.domain, 'lost@example.org')).status).toBe(200);
      // The start did happen: two delivery workflows of the project exist, the answered one and the lost one.
      await eventually(async () => (await listRuns(stack.temporal, `ProjectId = "${answerLost.project.id}"`)).length === 2, 30_000);
    } finally {
      proxy.setMode('pass');
    }
    expect(await recorded(answerLost.project.id)).toMatchObject({ emails: 2, counted: 2 });
  });

  it('once a worker runs: every answered send arrives once, by its own workflow or by the delivery sweep, and a sweep then finds nothing left', async () => {
    worker = await startStackWorker(
      stack,
      { SMTP_URL: smtp.url, DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', DELIVERY_RETRY_DELAYS: '1s,1s,1s' },
      WORKER_START_MS,
    );
    // The unreachable send's start never arrived: the sweep (every 5 s, for mail 15 s old) starts it.
    const [row] = await stack.orm.em
      .fork()
      .execute<Array<{ id: string; delivery_workflow_id: string }>>(`select id, delivery_workflow_id from emails where project_id = ?`, [
        unreachable.project.id,
      ]);
    await eventually(async () => {
      const [now] = await stack.orm.em.fork().execute(`select status from emails where id = ?`, [row.id]);
      if (now.status !== 'SENT') throw new Error(now.status);
    }, 90_000);
    const [first] = (await stack.temporal.workflow.getHandle(row.delivery_workflow_id).fetchHistory()).events ?? [];
    expect(first.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).toMatch(/-delivery-sweep-run/);

    // After these have closed, nothing of them can send anything more.
    await projectDeliveriesClosed(stack, unreachable.project.id);
    await projectDeliveriesClosed(stack, answerLost.project.id);
    expect(await recorded(answerLost.project.id)).toMatchObject({ queued: 0 });
    const sweep = await triggerScheduleRun<{ started: number; alreadyRunning: number }>(
      stack.temporal,
      deliverySweepScheduleId(stack.config.temporalTaskQueue),
    );
    expect(sweep.result).toEqual({ started: 0, alreadyRunning: 0 });
    expect(received('unreachable@example.org')).toBe(1);
    expect(received('before-loss@example.org')).toBe(1);
    expect(received('lost@example.org')).toBe(1);
  });
});
