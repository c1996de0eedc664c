import fs from 'node:fs';
import { startTestStack, testEnv, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { spawnService, type ChildService } from '../support/processes';
import { HttpClient } from '../support/http';
import { eventually } from '../support/eventually';
import { listRuns, triggerScheduleRun, workflowsClosed } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { deliverySweepScheduleId } from '../../worker/schedules';

/**
 * POST /v1/send answers once its emails are committed and starts their delivery afterwards
 * (contract 9). An API process killed with SIGKILL between the two loses nothing: the delivery
 * sweep starts the delivery under the id recorded with the rows, the mail arrives once, and
 * contract 14's search attributes find its delivery. The API runs as its own process (it is what
 * gets killed) and reaches Temporal through a proxy the test cuts just before the send, so its
 * start is in progress, and cannot have reached Temporal, when the kill lands; the stack's worker
 * (and so the sweep's schedule) reaches Temporal directly.
 */
const API_START_MS = 120_000;

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let proxy: TcpProxy;
let stack: TestStack;
let api: ChildService | undefined;
let apiDataDir: string | undefined;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  proxy = await startTcpProxy(process.env.MAILROOM_TEST_TEMPORAL_ADDRESS!);
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' } });
}, 180_000);

afterAll(async () => {
  api?.kill('SIGKILL');
  await api?.exited;
  if (apiDataDir) fs.rmSync(apiDataDir, { recursive: true, force: true });
  await stack?.stop();
  await proxy?.close();
  await smtp?.close();
  await dns?.close();
});

const received = (to: string) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length;

it('a send answered 200, its API killed before the delivery start reached Temporal: the sweep delivers it once, findable by its search attributes', async () => {
  const { project, domain } = await projectWithVerifiedDomain(stack, dns);
  const env = testEnv({
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_TASK_QUEUE: stack.config.temporalTaskQueue,
    SECRET: stack.config.secret,
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '2500',
    SMTP_URL: smtp.url,
  });
  apiDataDir = env.DATA_DIR;
  api = spawnService('api/main.ts', { ...env, DATABASE_URL: stack.databaseUrl });
  const listening = await api.waitForLine((l) => l.msg === 'api listening', API_START_MS);
  const http = new HttpClient(`http://127.0.0.1:${Number(listening.port)}`);
  await eventually(async () => expect((await http.get('/health')).body).toEqual({ status: 'ok', database: 'ok', temporal: 'ok' }), 60_000, 250);

  // From here the API's calls to Temporal cannot arrive: its delivery start retries until its 5 s deadline.
  proxy.setMode('refuse');
  const recipients = ['killed-1@example.org', 'killed-2@example.org'];
  const res = await http.post(
    '/v1/send',
    { to: recipients, from: `hello@${domain}`, subject: 'Before the kill', body: '<p>Hi</p>' },
    { key: project.secretKey, headers: { 'Idempotency-Key': 'killed-before-start' } },
  );
  const answeredAt = Date.now();
  api.kill('SIGKILL');
  await api.exited;
  proxy.setMode('pass');
  expect(res.body.error ?? null).toBeNull();
  expect(res.status).toBe(200);
  // Its whole log is written: the start had not failed (nor succeeded) when the process died.
  expect(api.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('could not start a delivery workflow'))).toEqual([]);

  const emailIds: string[] = res.body.data.emails.map((e: { email: string }) => e.email);
  const rows = await stack.orm.em
    .fork()
    .execute<Array<{ id: string; status: string; delivery_workflow_id: string }>>(
      `select id, status, delivery_workflow_id from emails where id = any(?::uuid[])`,
      [`{${emailIds.join(',')}}`],
    );
  expect(rows).toHaveLength(2);
  const [workflowId] = new Set(rows.map((r) => r.delivery_workflow_id));
  expect(rows.every((r) => r.delivery_workflow_id === workflowId)).toBe(true);
  // The key's outcome committed with the emails: the same key is refused, naming the 200.
  const again = await stack.http.post(
    '/v1/send',
    { to: recipients, from: `hello@${domain}`, subject: 'Before the kill', body: '<p>Hi</p>' },
    { key: project.secretKey, headers: { 'Idempotency-Key': 'killed-before-start' } },
  );
  expect(again.status).toBe(409);
  expect(again.body.error.details).toMatchObject({ key: 'killed-before-start', originalRequest: 'POST /v1/send', originalStatusCode: 200 });

  // The sweep (every 10 s, for emails 15 s old) starts it.
  await eventually(
    async () => {
      const sent = await stack.orm.em
        .fork()
        .execute<Array<{ n: number }>>(`select count(*)::int as n from emails where id = any(?::uuid[]) and status = 'SENT'`, [`{${emailIds.join(',')}}`]);
      if (sent[0].n !== emailIds.length) throw new Error(`${sent[0].n} of ${emailIds.length} SENT`);
    },
    90_000,
    200,
  );
  // eslint-disable-next-line no-console -- the figure, for the person reading the run
  console.log(`API killed after the commit: the mail was SENT ${((Date.now() - answeredAt) / 1000).toFixed(1)} s after the answer`);

  // The sweep started it, under the recorded id, and contract 14's search attributes find it.
  const runs = await eventually(async () => {
    const found = await listRuns(stack.temporal, `ProjectId = "${project.id}" AND EmailIds = "${emailIds[1]}"`);
    if (!found.length) throw new Error('not visible yet');
    return found;
  }, 30_000);
  expect(runs.map((r) => r.workflowId)).toEqual([workflowId]);
  const [first] = (await stack.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  expect(first.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).toMatch(/-delivery-sweep-run/);

  // Once it has closed nothing more comes of it, and a sweep finds nothing left to start.
  await workflowsClosed(stack.temporal, [workflowId]);
  const sweep = await triggerScheduleRun<{ started: number; alreadyRunning: number }>(stack.temporal, deliverySweepScheduleId(stack.config.temporalTaskQueue));
  expect(sweep.result).toEqual({ started: 0, alreadyRunning: 0 });
  expect(recipients.map(received)).toEqual([1, 1]);
}, 240_000);
