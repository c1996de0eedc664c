import { deliverySweepScheduleId } from '../../worker/schedules';
import { startTestStack, startStackWorker, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import type { ChildService } from '../support/processes';
import type { TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { listRuns, projectDeliveriesClosed, runsClosed, triggerScheduleRun } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';

/**
 * What a /v1/send client sees when its delivery workflow fails to start after its emails were
 * recorded: a 503 only for a send of which nothing will ever be sent; a send whose mail will be
 * sent anyway (a start that did happen, its answer lost) is accepted, and its mail sent once.
 * The API reaches Temporal through a proxy the tests cut; the worker and the tests' client do not.
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
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' },
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

const send = (project: TestProject, domain: string, to: string) =>
  stack.http.post('/v1/send', { to, from: `hello@${domain}`, subject: `For ${to}`, body: '<p>Hi</p>' }, { key: project.secretKey });

const received = (to: string) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length;

async function recorded(projectId: string): Promise<{ emails: number; counted: number }> {
  const [row] = await stack.orm.em
    .fork()
    .execute<Array<{ emails: number; counted: number }>>(
      `select (select count(*)::int from emails where project_id = ?) as emails, (select coalesce(sum(used), 0)::int from billing_usage where project_id = ?) as counted`,
      [projectId, projectId],
    );
  return row;
}

function expectTryAgain(res: { status: number; body: any }) {
  expect(res.status).toBe(503);
  expect(res.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/nothing was sent/) } });
}

describe('a delivery start that fails after the emails were recorded', () => {
  let unreachable: { project: TestProject; domain: string };
  let answerLost: { project: TestProject; domain: string };

  it('Temporal unreachable: 503, and nothing of the send stays recorded or counted', async () => {
    unreachable = await projectWithVerifiedDomain(stack, dns);
    proxy.setMode('refuse');
    try {
      expectTryAgain(await send(unreachable.project, unreachable.domain, 'unreachable@example.org'));
    } finally {
      proxy.setMode('pass');
    }
    expect(stack.logs.some((l) => l.msg === 'could not start a delivery workflow' && l.projectId === unreachable.project.id)).toBe(true);
    expect(await recorded(unreachable.project.id)).toEqual({ emails: 0, counted: 0 });
  });

  it('the start reached Temporal but its answer was lost, before any delivery took the email: 503, and the workflow that did start sends nothing', async () => {
    answerLost = await projectWithVerifiedDomain(stack, dns);
    // An answered send first, so the API's connection is open when the answers start getting lost.
    expect((await send(answerLost.project, answerLost.domain, 'before-loss@example.org')).status).toBe(200);
    proxy.setMode('loseAnswers');
    try {
      // No worker runs yet: nothing claims the email before the API withdraws it.
      expectTryAgain(await send(answerLost.project, answerLost.domain, 'lost-503@example.org'));
    } finally {
      proxy.setMode('pass');
    }
    expect(await recorded(answerLost.project.id)).toEqual({ emails: 1, counted: 1 });
    // The start did happen: two delivery workflows of the project exist, the answered one and the lost one.
    await eventually(async () => (await listRuns(stack.temporal, `ProjectId = "${answerLost.project.id}"`)).length === 2, 30_000);
  });

  it('once a worker runs: both workflows close, only the answered send arrives, and the delivery sweep finds nothing to send', async () => {
    worker = await startStackWorker(
      stack,
      { SMTP_URL: smtp.url, DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500', DELIVERY_RETRY_DELAYS: '1s,1s,1s' },
      WORKER_START_MS,
    );
    // After these have closed, nothing of them can send anything more.
    await runsClosed(stack.temporal, `ProjectId = "${answerLost.project.id}"`, { atLeast: 2 });
    // The sweep would start any recorded mail that no delivery has taken; this run has closed.
    const sweep = await triggerScheduleRun<{ started: number; alreadyRunning: number }>(
      stack.temporal,
      deliverySweepScheduleId(stack.config.temporalTaskQueue),
    );
    expect(sweep.result).toEqual({ started: 0, alreadyRunning: 0 });
    expect(received('before-loss@example.org')).toBe(1);
    expect(received('lost-503@example.org')).toBe(0);
    expect(received('unreachable@example.org')).toBe(0);
    expect(await recorded(unreachable.project.id)).toEqual({ emails: 0, counted: 0 });
  });

  it('the start reached Temporal but its answer was lost, and its delivery took the email meanwhile: 200, and the email is sent once', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    // The previous mode change cut the API's connection: an answered send opens a new one.
    expect((await send(project, domain, 'reconnect@example.org')).status).toBe(200);
    proxy.setMode('loseAnswers');
    let res;
    try {
      res = await send(project, domain, 'lost-200@example.org');
    } finally {
      proxy.setMode('pass');
    }
    expect(res.body.error ?? null).toBeNull();
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].email;
    expect(stack.logs.some((l) => l.msg === 'could not start a delivery workflow' && l.workflowId === `send-${emailId}`)).toBe(true);
    expect(stack.logs.some((l) => typeof l.msg === 'string' && l.msg.includes('already claimed') && l.firstEmailId === emailId)).toBe(true);
    await eventually(async () => {
      const [row] = await stack.orm.em.fork().execute(`select status from emails where id = ?`, [emailId]);
      if (row.status !== 'SENT') throw new Error(row.status);
    }, 30_000);
    await projectDeliveriesClosed(stack, project.id);
    expect(received('lost-200@example.org')).toBe(1);
  });
});
