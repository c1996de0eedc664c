import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';
import { insertWorkflow, chain } from '../workflows/workflowDefinitionRows';
import { createOrm, type Orm } from '../../db/orm';
import type { HttpResponse } from '../support/http';
import {
  domainRecheckWorkflow,
  emailDeliverySweepWorkflow,
  hourlyCleanupWorkflow,
  trackedSegmentsRecomputeWorkflow,
  workflowExecutionSweepWorkflow,
} from '../../workflows';

/**
 * PostgreSQL goes away under load, as an operator's restart or failover does: the API's and the
 * worker's connections go through a proxy the test cuts (the database unreachable for 20 s), and
 * separately every Mailroom connection is killed on the server (pg_terminate_backend, what a
 * restart does to open sessions). Meanwhile a campaign sends, a CSV import runs, automation
 * executions wait and send, and /v1/send takes a stream of requests. Afterwards every job has
 * finished with exact counts, every accepted send was delivered once, every refused one was
 * answered 503 in the envelope with Retry-After within seconds, and service was back within seconds.
 */
jest.setTimeout(600_000);

const OUTAGE_MS = 20_000;
const RECIPIENTS = 300;
const IMPORT_ROWS = 50_000;
const EXECUTIONS = 20;
/** A refused request must be answered well within any client's timeout. */
const ANSWER_WITHIN_MS = 30_000;
/**
 * Service is back this soon after the database is: the pools reconnect on their own (seconds when
 * idle; the bound leaves room for a loaded machine, where processes run several times slower).
 */
const BACK_WITHIN_MS = 30_000;

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let proxy: TcpProxy;
let stack: TestStack;
/** A connection of the test's own, straight to PostgreSQL (for the counts and for killing sessions). */
let direct: Orm;
let project: TestProject;
let domain: string;

const unique = (prefix: string) => `${prefix}-${crypto.randomBytes(4).toString('hex')}`;
const key = () => ({ key: project.secretKey });

beforeAll(async () => {
  const server = new URL(process.env.MAILROOM_TEST_PG_SERVER_URL!);
  proxy = await startTcpProxy(`${server.hostname}:${server.port || 5432}`);
  const throughProxy = (url: string) => {
    const through = new URL(url);
    through.host = proxy.address;
    return through.toString();
  };
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({
    // The product's DNS timeout (2500 ms): the test's DNS server answers from this process, whose
    // event loop a loaded machine stalls for more than a shorter one, leaving the domain PENDING.
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url },
    apiDatabaseUrl: throughProxy,
    workerDatabaseUrl: throughProxy,
  });
  direct = await createOrm(stack.databaseUrl, { pool: { min: 0, max: 2 } });
  ({ project, domain } = await projectWithVerifiedDomain(stack, dns));
}, 180_000);

afterAll(async () => {
  proxy?.setMode('pass');
  smtp?.slowDown(0);
  await direct?.close();
  await stack?.stop();
  await proxy?.close();
  await smtp?.close();
  await dns?.close();
});

function deliveredTo(prefix: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of smtp.messages) {
    const to = m.envelopeTo[0];
    if (to.startsWith(`${prefix}-`)) counts.set(to, (counts.get(to) ?? 0) + 1);
  }
  return counts;
}

// ---- The jobs that run through the outage -------------------------------------------------------

interface Jobs {
  prefix: string;
  campaignId: string;
  recipients: string[];
  importJobPath: string;
  automationId: string;
  automationContacts: string[];
}

async function startJobs(prefix: string): Promise<Jobs> {
  // The campaign: a few hundred subscribed contacts, sent through a slow relay so it is mid-send.
  const recipients = Array.from({ length: RECIPIENTS }, (_, i) => `${prefix}c-${i}@example.org`);
  await direct.em
    .fork()
    .execute(`insert into contacts (project_id, email, subscribed, data) select ?, e, true, ?::jsonb from jsonb_array_elements_text(?::jsonb) as e`, [
      project.id,
      JSON.stringify({ batch: prefix }),
      JSON.stringify(recipients),
    ]);
  const created = await stack.http.post(
    '/campaigns',
    {
      name: prefix,
      subject: 'Campaign {{email}}',
      body: '<p>Hi</p>',
      from: `news@${domain}`,
      audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.batch', operator: 'equals', value: prefix }] }] },
    },
    key(),
  );
  expect(created.status).toBe(201);
  const campaignId = created.body.data.id as string;

  // The automation: a send, a wait that runs out during the outage, a second send.
  const templates: string[] = [];
  for (const subject of ['First {{email}}', 'Second {{email}}']) {
    const t = await stack.http.post('/templates', { name: unique('t'), subject, body: '<p>Hello</p>', from: `hello@${domain}`, type: 'TRANSACTIONAL' }, key());
    expect(t.status).toBe(201);
    templates.push(t.body.id);
  }
  const eventName = unique('joined');
  const automation = await insertWorkflow(stack, project.id, {
    eventName,
    steps: [
      { key: 'first', type: 'SEND_EMAIL', config: { templateId: templates[0] }, templateId: templates[0] },
      { key: 'pause', type: 'DELAY', config: { amount: 0.1, unit: 'minutes' } },
      { key: 'second', type: 'SEND_EMAIL', config: { templateId: templates[1] }, templateId: templates[1] },
    ],
    transitions: chain('first', 'pause', 'second'),
  });

  smtp.slowDown(300);
  expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, key())).status).toBe(200);

  const lines = ['email,n'];
  for (let i = 0; i < IMPORT_ROWS; i++) lines.push(`${prefix}i-${i}@example.net,${i}`);
  const upload = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: `${prefix}.csv`, content: lines.join('\n') });
  expect(upload.status).toBe(202);

  const automationContacts = Array.from({ length: EXECUTIONS }, (_, i) => `${prefix}a-${i}@example.org`);
  for (const email of automationContacts) {
    expect((await stack.http.post('/v1/track', { email, event: eventName }, { key: project.publicKey })).status).toBe(200);
  }

  const jobs = { prefix, campaignId, recipients, importJobPath: `/contacts/import/${upload.body.jobId}`, automationId: automation.id, automationContacts };
  // Every job is under way (some of its work done, most not) when the database goes away.
  await eventually(
    async () => {
      const sent = deliveredTo(`${prefix}c`).size;
      const imported = (await stack.http.get(jobs.importJobPath, key())).body.processed ?? 0;
      const firsts = deliveredTo(`${prefix}a`).size;
      if (sent < 20 || imported < 1000 || firsts < EXECUTIONS) throw new Error(`campaign ${sent}, import ${imported}, automation ${firsts}`);
    },
    120_000,
    50,
  );
  return jobs;
}

async function expectJobsFinished(jobs: Jobs, label: string): Promise<void> {
  const { prefix } = jobs;
  smtp.slowDown(0);
  const campaign = await eventually(
    async () => {
      const c = (await stack.http.get(`/campaigns/${jobs.campaignId}`, key())).body;
      if (c.status !== 'SENT') throw new Error(`campaign ${c.status}, sent ${c.sentCount}`);
      return c;
    },
    240_000,
    500,
  );
  expect(campaign).toMatchObject({ totalRecipients: RECIPIENTS, sentCount: RECIPIENTS });
  const campaignCounts = deliveredTo(`${prefix}c`);
  const duplicates = [...campaignCounts.values()].filter((n) => n > 1).length;
  expect(jobs.recipients.filter((r) => !campaignCounts.has(r))).toEqual([]);
  // A batch hands its recipients to the relay 25 at a time and records each wave before the next;
  // four batches run side by side. A wave the relay accepted waits (up to a minute) for the
  // database to record it, so an outage this short repeats nothing; what could repeat is a wave
  // whose attempt failed anyway (a worker killed, a longer outage): at most the waves in flight, 4 × 25.
  expect(duplicates).toBeLessThanOrEqual(100);

  const imported = await eventually(
    async () => {
      const job = (await stack.http.get(jobs.importJobPath, key())).body;
      if (job.status !== 'COMPLETED') throw new Error(`import ${job.status} ${job.processed}`);
      return job;
    },
    240_000,
    500,
  );
  expect(imported).toMatchObject({ total: IMPORT_ROWS, processed: IMPORT_ROWS, succeeded: IMPORT_ROWS, failed: 0, errors: [] });
  const [{ n, distinct_n }] = await direct.em
    .fork()
    .execute(`select count(*)::int as n, count(distinct (data->>'n'))::int as distinct_n from contacts where project_id = ? and email like ?`, [
      project.id,
      `${prefix}i-%`,
    ]);
  expect({ n, distinct_n }).toEqual({ n: IMPORT_ROWS, distinct_n: IMPORT_ROWS });

  await eventually(
    async () => {
      const list = (await stack.http.get(`/workflows/${jobs.automationId}/executions?pageSize=100`, key())).body;
      const statuses = (list.data ?? []).map((e: { status: string }) => e.status);
      expect(statuses).toEqual(Array(EXECUTIONS).fill('COMPLETED'));
    },
    240_000,
    500,
  );
  const automationDuplicates: string[] = [];
  for (const email of jobs.automationContacts) {
    const subjects = smtp.messages
      .filter((m) => m.envelopeTo[0] === email)
      .map((m) => m.parsed.subject ?? '')
      .sort();
    expect(new Set(subjects)).toEqual(new Set([`First ${email}`, `Second ${email}`]));
    if (subjects.length > 2) automationDuplicates.push(...subjects.slice(2));
  }
  // An execution's send records the email before handing it to the relay, and its outcome waits
  // out the outage: the step, retried, finds its email recorded and sent, and sends nothing again.
  expect(automationDuplicates).toEqual([]);

  // What the outage cost: activity attempts that failed (and were retried), by type; no workflow run failed.
  const failedAttempts = new Map<string, number>();
  for (const l of stack.logs)
    if (l.event === 'activity.failed') failedAttempts.set(String(l.activityType), (failedAttempts.get(String(l.activityType)) ?? 0) + 1);
  // eslint-disable-next-line no-console -- the figures, for the person reading the run
  console.log(`${label}: failed activity attempts so far ${JSON.stringify(Object.fromEntries(failedAttempts))}`);
  expect(
    stack.logs.filter((l) => l.event === 'workflow.failed').map((l) => `${String(l.workflowType)} ${String(l.workflowId)}: ${String(l.error ?? l.msg)}`),
  ).toEqual([]);

  // The worker rode it out: still polling, no worker stopped.
  expect(stack.workers.map((w) => w.getState())).toEqual(stack.workers.map(() => 'RUNNING'));
  // eslint-disable-next-line no-console -- the figures, for the person reading the run
  console.log(`${label}: campaign ${RECIPIENTS} recipients, ${duplicates} received twice; import ${IMPORT_ROWS} rows; ${EXECUTIONS} executions`);
}

// ---- /v1/send under the outage ------------------------------------------------------------------

interface SendOutcome {
  to: string;
  status: number;
  ms: number;
  code?: string;
  retryAfter: string | null;
  text: string;
}

async function send(to: string): Promise<SendOutcome> {
  const startedAt = Date.now();
  const res: HttpResponse = await stack.http.post('/v1/send', { to, subject: `Send ${to}`, body: '<p>Hi</p>', from: `hello@${domain}` }, key());
  return { to, status: res.status, ms: Date.now() - startedAt, code: res.body?.error?.code, retryAfter: res.headers.get('retry-after'), text: res.text };
}

/** Fires a send every `everyMs` until `until` resolves; answers every outcome once all are in. */
async function sendsUntil(prefix: string, until: Promise<unknown>, everyMs: number): Promise<SendOutcome[]> {
  const pending: Array<Promise<SendOutcome>> = [];
  let done = false;
  void until.then(() => (done = true));
  for (let i = 0; !done; i++) {
    pending.push(send(`${prefix}-${i}@example.org`));
    await Promise.race([until, new Promise((r) => setTimeout(r, everyMs))]);
  }
  return Promise.all(pending);
}

/** Every answer is a 2xx or a 503 in the envelope with Retry-After, within the bound; never a 500 or a hang. */
function expectHonestAnswers(outcomes: SendOutcome[]): void {
  const dishonest = outcomes.filter(
    (o) => !((o.status >= 200 && o.status < 300) || (o.status === 503 && o.code === 'SERVICE_UNAVAILABLE' && o.retryAfter === '5')),
  );
  // A 500 names only its request id; the API's log line for that id says what was thrown.
  const cause = (o: SendOutcome) => {
    const requestId = /"requestId":"([^"]+)"/.exec(o.text)?.[1];
    const line = requestId ? stack.logs.find((l) => l.requestId === requestId && l.err) : undefined;
    return line ? ` <- ${JSON.stringify(line.err).slice(0, 1500)}` : '';
  };
  expect(dishonest.map((o) => `${o.status} ${o.text}${cause(o)}`)).toEqual([]);
  expect(outcomes.filter((o) => o.ms >= ANSWER_WITHIN_MS).map((o) => `${o.status} after ${o.ms} ms`)).toEqual([]);
}

/** Each accepted send is delivered exactly once; a refused one at most once (see below). */
async function expectSendsDelivered(prefix: string, outcomes: SendOutcome[]): Promise<{ refusedButDelivered: number }> {
  const accepted = outcomes.filter((o) => o.status >= 200 && o.status < 300).map((o) => o.to);
  await eventually(
    () => {
      const counts = deliveredTo(prefix);
      const missing = accepted.filter((to) => !counts.has(to));
      if (missing.length) throw new Error(`${missing.length} accepted sends not delivered yet`);
    },
    120_000,
    250,
  );
  // Every accepted send was delivered: wait until every delivery that will happen has happened,
  // i.e. no email of the project is left to deliver, before counting.
  await eventually(
    async () => {
      const [{ waiting }] = await direct.em
        .fork()
        .execute(`select count(*)::int as waiting from emails where project_id = ? and status in ('QUEUED', 'SENDING')`, [project.id]);
      if (waiting > 0) throw new Error(`${waiting} emails still to deliver`);
    },
    120_000,
    250,
  );
  const counts = deliveredTo(prefix);
  expect(accepted.filter((to) => counts.get(to) !== 1).map((to) => `${to}: ${counts.get(to) ?? 0}`)).toEqual([]);
  // A send whose commit reached PostgreSQL just as the connection was cut is recorded (and so
  // delivered) though its answer was lost and the client got a 503: delivered once, never twice.
  const refused = outcomes.filter((o) => o.status === 503).map((o) => o.to);
  expect(refused.filter((to) => (counts.get(to) ?? 0) > 1)).toEqual([]);
  return { refusedButDelivered: refused.filter((to) => counts.has(to)).length };
}

/** How long after the database is back until a send is accepted again. */
async function backAfter(prefix: string): Promise<{ ms: number; outcomes: SendOutcome[] }> {
  const startedAt = Date.now();
  const outcomes: SendOutcome[] = [];
  for (let i = 0; ; i++) {
    const outcome = await send(`${prefix}-${i}@example.org`);
    outcomes.push(outcome);
    if (outcome.status >= 200 && outcome.status < 300) return { ms: Date.now() - startedAt, outcomes };
    if (Date.now() - startedAt > 60_000) throw new Error(`sends still refused a minute after the database came back: ${outcome.status} ${outcome.text}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('rides out PostgreSQL unreachable for 20 s: every job finishes, every send is answered honestly', async () => {
  const prefix = unique('away');
  const jobs = await startJobs(prefix);
  const before = await Promise.all(Array.from({ length: 5 }, (_, i) => send(`${prefix}s-before${i}@example.org`)));
  expect(before.map((o) => o.status)).toEqual(Array(5).fill(200));

  proxy.setMode('refuse');
  const outage = delay(OUTAGE_MS);
  const during = await sendsUntil(`${prefix}s-during`, outage, 600);
  proxy.setMode('pass');
  const back = await backAfter(`${prefix}s-back`);
  const after = await Promise.all(Array.from({ length: 10 }, (_, i) => send(`${prefix}s-after${i}@example.org`)));

  // eslint-disable-next-line no-console -- the figures, for the person reading the run
  console.log(
    `database away ${OUTAGE_MS / 1000} s: ${during.length} sends during it (${during.filter((o) => o.status === 503).length} answered 503, slowest ${Math.max(...during.map((o) => o.ms))} ms); sends accepted again ${back.ms} ms after it came back`,
  );
  expect(during.length).toBeGreaterThanOrEqual(24);
  // While the database is unreachable nothing can be accepted.
  expect(during.filter((o) => o.status !== 503).map((o) => `${o.status} ${o.text}`)).toEqual([]);
  expectHonestAnswers([...during, ...back.outcomes]);
  expect(back.ms).toBeLessThan(BACK_WITHIN_MS);
  expect(after.map((o) => o.status)).toEqual(Array(10).fill(200));
  expect((await stack.http.get('/health')).status).toBe(200);

  await expectJobsFinished(jobs, 'database away');
  const { refusedButDelivered } = await expectSendsDelivered(`${prefix}s`, [...before, ...during, ...back.outcomes, ...after]);
  expect(refusedButDelivered).toBe(0);
});

it('rides out every Mailroom connection killed on the server, again and again: every job finishes, every send is answered honestly', async () => {
  const prefix = unique('kill');
  const jobs = await startJobs(prefix);
  const killAll = async () => {
    const killed = await direct.em
      .fork()
      .execute(`select pg_terminate_backend(pid) as killed from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`);
    return killed.length;
  };
  // A restart's worth of killed sessions, five times a second apart, under a stream of sends.
  const kills = (async () => {
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) {
      counts.push(await killAll());
      await delay(1000);
    }
    return counts;
  })();
  const during = await sendsUntil(`${prefix}s-during`, kills, 150);
  const killedSessions = await kills;
  const back = await backAfter(`${prefix}s-back`);

  // eslint-disable-next-line no-console -- the figures, for the person reading the run
  console.log(
    `sessions killed ${killedSessions.join(', ')}: ${during.length} sends meanwhile (${during.filter((o) => o.status === 503).length} answered 503, slowest ${Math.max(...during.map((o) => o.ms))} ms); accepted again ${back.ms} ms after`,
  );
  // The kills hit sessions of the API and of the worker, not an idle database.
  expect(killedSessions.every((n) => n > 0)).toBe(true);
  // The driver's word on each dropped connection is a JSON log line, not plain text on the console.
  expect(stack.logs.some((l) => l.event === 'database.driver' && String(l.detail).includes('Connection Error'))).toBe(true);
  expectHonestAnswers([...during, ...back.outcomes]);
  expect(back.ms).toBeLessThan(BACK_WITHIN_MS);

  await expectJobsFinished(jobs, 'sessions killed');
  const { refusedButDelivered } = await expectSendsDelivered(`${prefix}s`, [...during, ...back.outcomes]);
  // eslint-disable-next-line no-console -- the figure, for the person reading the run
  console.log(`sessions killed: ${refusedButDelivered} sends answered 503 were delivered (their commit made it, their answer did not)`);
});

it('lets scheduled work (sweeps, clean-up, rechecks, usage reports) started while PostgreSQL is away finish once it is back', async () => {
  const periodic = [
    hourlyCleanupWorkflow,
    domainRecheckWorkflow,
    emailDeliverySweepWorkflow,
    trackedSegmentsRecomputeWorkflow,
    workflowExecutionSweepWorkflow,
    // billingUsageReportWorkflow shares the policy; without Stripe settings it asks the database nothing.
  ];
  proxy.setMode('refuse');
  // A tick of each schedule while the database is away (each starts as its schedule would).
  const runs = await Promise.all(
    periodic.map((workflow) =>
      stack.temporal.workflow.start(workflow, { workflowId: unique(`outage-${workflow.name}`), taskQueue: stack.config.temporalTaskQueue, args: [] }),
    ),
  );
  // Every run's first activity attempt has failed for want of the database before it comes back.
  await eventually(
    async () => {
      const failedRuns = new Set(stack.logs.filter((l) => l.event === 'activity.failed').map((l) => String(l.workflowId)));
      const waiting = runs.filter((run) => !failedRuns.has(run.workflowId)).map((run) => run.workflowId);
      if (waiting.length) throw new Error(`no failed attempt yet for ${waiting.join(', ')}`);
    },
    60_000,
    250,
  );
  await delay(OUTAGE_MS);
  proxy.setMode('pass');
  const outcomes = await Promise.all(
    runs.map((run) =>
      run.result().then(
        () => 'COMPLETED',
        (err: Error) => `FAILED ${err.message}`,
      ),
    ),
  );
  expect(Object.fromEntries(runs.map((run, i) => [run.workflowId.replace(/^outage-|-[0-9a-f]{8}$/g, ''), outcomes[i]]))).toEqual(
    Object.fromEntries(periodic.map((w) => [w.name, 'COMPLETED'])),
  );
});
