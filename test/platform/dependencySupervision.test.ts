import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { findFreePort } from '../../lib/freePort';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { HttpClient } from '../support/http';
import { accountWithProject, signUp } from '../support/accounts';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { eventually } from '../support/eventually';
import { startStack, stopStack, type StartedStack } from '../support/startCommand';

/**
 * `npm start` supervises the servers it started itself, as it does the API and the worker: the
 * embedded Temporal dev server or PostgreSQL killed with SIGKILL is started again on the same
 * data and port, /health comes back to 200, and the work carries on.
 */
const RECIPIENTS = 300;
/**
 * A campaign batch hands its emails to the relay 25 at a time and records each wave before the
 * next; a batch retried after the outage (its heartbeats failed, or its completion could not be
 * reported) finds the emails recorded and sent before and can only repeat the wave that was in
 * flight. 300 recipients are one batch (500), so one wave.
 */
const MAX_DUPLICATES = 25;
jest.setTimeout(240_000);

const stacks: StartedStack[] = [];
afterAll(() => stacks.forEach(stopStack));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function healthy(http: HttpClient, timeoutMs = 90_000): Promise<void> {
  await eventually(
    async () => {
      const res = await http.get('/health');
      if (res.status !== 200 || res.body?.status !== 'ok') throw new Error(`health ${res.status} ${JSON.stringify(res.body)}`);
    },
    timeoutMs,
    250,
  );
}

/**
 * Polls /health until `stop()` and returns every answer that was not 200 `ok` (the test checks each
 * names the part that is away). An outage shorter than the probe's cache can pass unseen, so the test
 * does not require one.
 */
function watchHealth(http: HttpClient): { stop: () => Promise<Array<Record<string, unknown>>> } {
  const degraded: Array<Record<string, unknown>> = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await http.get('/health').catch(() => undefined);
      if (res && (res.status !== 200 || res.body?.status !== 'ok')) degraded.push({ httpStatus: res.status, body: res.body });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return degraded;
    },
  };
}

function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-supervise-'));
  // As root, the embedded PostgreSQL runs as the postgres user, which must be able to enter here.
  fs.chmodSync(dir, 0o755);
  return dir;
}

describe('npm start on its embedded Temporal dev server', () => {
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  let databaseUrl: string;
  const dir = dataDir();
  beforeAll(async () => {
    [dns, smtp, databaseUrl] = await Promise.all([startTestDnsServer(), startSmtpServer(), createTestDatabase()]);
  });
  afterAll(async () => {
    await smtp?.close();
    await dns?.close();
    if (databaseUrl) await dropTestDatabase(databaseUrl);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('restarts the Temporal dev server killed with SIGKILL mid-campaign, and the campaign completes, each contact mailed once', async () => {
    const ports = { api: await findFreePort(), temporal: await findFreePort(), ui: await findFreePort() };
    const stack = startStack({
      ...testEnv(),
      TEMPORAL_ADDRESS: undefined,
      DATA_DIR: dir,
      DATABASE_URL: databaseUrl,
      PORT: String(ports.api),
      PUBLIC_URL: `http://127.0.0.1:${ports.api}`,
      EMBEDDED_TEMPORAL_PORT: String(ports.temporal),
      EMBEDDED_TEMPORAL_UI_PORT: String(ports.ui),
      SMTP_URL: smtp.url,
      DNS_SERVERS: dns.address,
    });
    stacks.push(stack);
    const temporal = await stack.waitFor((l) => l.process === 'temporal' && l.msg?.startsWith('Temporal dev server ready'));
    const http = new HttpClient(`http://127.0.0.1:${ports.api}`);
    await healthy(http);

    const { project, domain } = await projectWithVerifiedDomain({ http }, dns);
    const recipients = Array.from({ length: RECIPIENTS }, (_, i) => `supervised-${i}@example.org`);
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      await db.query(`insert into contacts (project_id, email, subscribed) select $1, e, true from jsonb_array_elements_text($2::jsonb) as e`, [
        project.id,
        JSON.stringify(recipients),
      ]);
    } finally {
      await db.end();
    }
    const created = await http.post(
      '/campaigns',
      { name: 'supervised', subject: 'Hello {{email}}', body: '<p>Hi</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    expect(created.status).toBe(201);
    const campaignId = created.body.data.id;

    // A slow relay keeps the campaign going while the server is away; normal speed once it is back.
    smtp.slowDown(100);
    const delivered = () => new Set(smtp.messages.map((m) => m.envelopeTo[0])).size;
    expect((await http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey })).status).toBe(200);
    await eventually(() => delivered() >= 30, 60_000, 20);
    const health = watchHealth(http);
    process.kill(temporal.childPid, 'SIGKILL');
    expect(delivered()).toBeLessThan(RECIPIENTS);

    const crash = await stack.waitFor((l) => l.process === 'temporal' && /exited unexpectedly/.test(l.msg ?? ''));
    expect(crash).toMatchObject({ level: 'error', signal: 'SIGKILL', restartInMs: 1000, crashes: 1 });
    expect(crash.msg).toContain('Temporal dev server exited unexpectedly (SIGKILL); restarting it in 1 s');
    const back = await stack.waitFor((l) => l.process === 'temporal' && l.msg?.startsWith('Temporal dev server is back'));
    smtp.slowDown(0);
    expect(back.childPid).not.toBe(temporal.childPid);
    expect(isAlive(back.childPid)).toBe(true);
    await healthy(http);
    const degraded = await health.stop();
    // Only Temporal away: the API stays in service (contract 2).
    for (const answer of degraded) expect(answer).toEqual({ httpStatus: 200, body: { status: 'degraded', database: 'ok', temporal: 'down' } });

    const campaign = await eventually(
      async () => {
        const c = (await http.get(`/campaigns/${campaignId}`, { key: project.secretKey })).body;
        if (c.status !== 'SENT') throw new Error(`status ${c.status}, sent ${c.sentCount}`);
        return c;
      },
      150_000,
      500,
    );
    expect(campaign).toMatchObject({ totalRecipients: RECIPIENTS, sentCount: RECIPIENTS });
    const counts = new Map<string, number>();
    for (const m of smtp.messages) counts.set(m.envelopeTo[0], (counts.get(m.envelopeTo[0]) ?? 0) + 1);
    expect(recipients.filter((r) => !counts.has(r))).toEqual([]);
    const duplicates = [...counts.values()].filter((n) => n > 1).length;
    // eslint-disable-next-line no-console -- the counts, for the person reading the run
    console.log(`Temporal killed: ${RECIPIENTS} recipients, ${duplicates} received twice, /health degraded answers: ${degraded.length}`);
    expect(duplicates).toBeLessThanOrEqual(MAX_DUPLICATES);

    // Shutdown stops the restarted server and restarts nothing.
    stack.child.kill('SIGTERM');
    expect(await stack.exited).toBe(0);
    expect(stack.logs.filter((l) => l.process === 'temporal' && /exited unexpectedly/.test(l.msg ?? ''))).toEqual([crash]);
    expect(stack.logs.some((l) => l.msg === 'Temporal dev server stopped')).toBe(true);
    expect(isAlive(back.childPid)).toBe(false);
  });
});

describe('npm start on its embedded PostgreSQL', () => {
  const dir = dataDir();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('restarts PostgreSQL killed with SIGKILL on the same data; /health comes back and writes work', async () => {
    const ports = { api: await findFreePort(), pg: await findFreePort() };
    const stack = startStack({
      ...testEnv(),
      DATABASE_URL: undefined,
      DATA_DIR: dir,
      PORT: String(ports.api),
      PUBLIC_URL: `http://127.0.0.1:${ports.api}`,
      EMBEDDED_POSTGRES_PORT: String(ports.pg),
    });
    stacks.push(stack);
    const postgres = await stack.waitFor((l) => l.process === 'postgres' && l.msg?.startsWith('embedded PostgreSQL started'));
    const http = new HttpClient(`http://127.0.0.1:${ports.api}`);
    await healthy(http);
    const before = await signUp(http);

    // A backend busy computing does not notice that its postmaster died, and holds on to the shared
    // memory the next start refuses to share: the supervisor must not wait for it to finish.
    const serverUrl = `postgres://postgres:postgres@127.0.0.1:${ports.pg}/mailroom`;
    const busy = new Client({ connectionString: serverUrl });
    busy.on('error', () => undefined);
    await busy.connect();
    // It ends by itself in a minute whatever happens (the timeout needs no postmaster), long after the supervisor would have given up on it.
    await busy.query(`set statement_timeout = '60s'`);
    const busyQuery = busy.query('select count(*) from generate_series(1, 10000000000)').catch(() => undefined);
    const observer = new Client({ connectionString: serverUrl });
    observer.on('error', () => undefined);
    await observer.connect();
    await eventually(async () => {
      const { rows } = await observer.query(
        `select 1 from pg_stat_activity where state = 'active' and query like '%generate_series%' and pid <> pg_backend_pid()`,
      );
      return rows.length === 1;
    });
    await observer.end();

    const health = watchHealth(http);
    process.kill(postgres.childPid, 'SIGKILL');
    const crash = await stack.waitFor((l) => l.process === 'postgres' && /exited unexpectedly/.test(l.msg ?? ''));
    expect(crash).toMatchObject({ level: 'error', signal: 'SIGKILL', restartInMs: 1000, crashes: 1 });
    await busyQuery;
    const back = await stack.waitFor((l) => l.process === 'postgres' && l.msg?.startsWith('embedded PostgreSQL is back'));
    expect(back.childPid).not.toBe(postgres.childPid);
    // Back at the first try, the busy backend stopped first.
    expect(stack.logs.filter((l) => l.process === 'postgres' && l.level === 'error')).toEqual([crash]);
    const leftovers = stack.logs.find((l) => l.process === 'postgres' && l.msg?.includes('a PostgreSQL that died had left running'));
    expect(leftovers?.pids.length).toBeGreaterThanOrEqual(1);
    await healthy(http);
    const degraded = await health.stop();
    for (const answer of degraded) expect(answer).toEqual({ httpStatus: 503, body: { status: 'degraded', database: 'down', temporal: 'ok' } });

    // The same data: the account made before the kill logs in; and a write after it lands.
    const login = await http.post('/auth/login', { email: before.email, password: before.password });
    expect(login.status).toBe(200);
    const { project } = await accountWithProject(http);
    expect(project.secretKey).toBeTruthy();

    stack.child.kill('SIGTERM');
    expect(await stack.exited).toBe(0);
    expect(stack.logs.filter((l) => l.process === 'postgres' && /exited unexpectedly/.test(l.msg ?? ''))).toEqual([crash]);
    expect(stack.text.join('\n')).toContain('embedded PostgreSQL stopped');
    expect(isAlive(back.childPid)).toBe(false);
  });
});
