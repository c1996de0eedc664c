import http from 'node:http';
import pg from 'pg';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi } from '../support/processes';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';

interface Outcome {
  /**
   * 'answered': a complete response; 'refused': the connection was never accepted; 'reset': the
   * connection was reset before any byte of an answer (the kernel had completed it when the listener
   * closed, see api/httpDrain.ts); 'failed': anything else (a hang-up after part of an answer, ...).
   */
  kind: 'answered' | 'refused' | 'reset' | 'failed';
  status?: number;
  connection?: string;
  error?: string;
}

/**
 * Sends POST /events/track with `Expect: 100-continue` and resolves `inFlight` once the API has
 * read the request head and asked for the body (so it has accepted the request), then sends the
 * body when `sendBody` resolves.
 */
function trackRequest(port: number, agent: http.Agent | false, key: string, email: string, sendBody: Promise<void>) {
  const body = JSON.stringify({ event: 'drained', email, data: { note: 'x'.repeat(2000) } });
  let markInFlight!: () => void;
  const inFlight = new Promise<void>((resolve) => (markInFlight = resolve));
  const outcome = new Promise<Outcome>((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        agent,
        method: 'POST',
        path: '/events/track',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Expect: '100-continue' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ kind: 'answered', status: res.statusCode, connection: String(res.headers.connection ?? '') }));
        res.on('error', (err) => resolve({ kind: 'failed', error: String(err) }));
      },
    );
    req.on('continue', () => {
      markInFlight();
      void sendBody.then(() => req.end(body));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(beforeAnswer(err)));
  });
  return { inFlight, outcome };
}

/** What a request error before any response byte means: refused or reset at the kernel, else failed. */
function beforeAnswer(err: NodeJS.ErrnoException): Outcome {
  const kind = err.code === 'ECONNREFUSED' ? 'refused' : err.code === 'ECONNRESET' ? 'reset' : 'failed';
  return { kind, error: `${err.code}: ${err.message}` };
}

/** One short GET on a fresh connection: a complete answer or a refusal are both fine during shutdown. */
function probe(port: number, path = '/health'): Promise<Outcome & { body?: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ kind: 'answered', status: res.statusCode, connection: String(res.headers.connection ?? ''), body }));
      res.on('error', (err) => resolve({ kind: 'failed', error: String(err) }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(beforeAnswer(err)));
  });
}

/**
 * What the drain promises a client opening new connections while the API stops listening: answers
 * (each `answeredStatus` when given), then at most one connection reset before any byte of an answer
 * (the one the kernel completed as the listener closed: Linux resets what it had queued), then
 * refusals; never a hang, never part of an answer.
 */
function expectAnsweredThenRefused(probes: Outcome[], answeredStatus?: number) {
  const kinds = probes.map((o) => o.kind).join(' ');
  expect(kinds).toMatch(/^(answered )*(reset )?refused( refused)*$/);
  if (answeredStatus !== undefined) expect(probes.filter((o) => o.kind === 'answered' && o.status !== answeredStatus)).toEqual([]);
}

/** Counts what each kind of outcome came to, for a readable failure message. */
function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.kind === 'answered' ? `answered ${o.status}` : `${o.kind} ${o.error ?? ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

async function countEvents(databaseUrl: string, projectId: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(`select count(*)::int as n from events where name = 'drained' and project_id = $1`, [projectId]);
    return rows[0].n;
  } finally {
    await client.end();
  }
}

/**
 * Issue 13 item 7: on SIGTERM the API stops accepting connections, answers every request it had
 * accepted, closes idle keep-alive connections, then exits; no client sees a reset.
 */
describe('the API draining under load on SIGTERM', () => {
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });
  afterAll(async () => {
    await dropTestDatabase(databaseUrl);
  });

  // Without the notice period by default: these tests are about what happens once the listener closes.
  async function startApi(env: Record<string, string> = {}) {
    const api = await spawnApi({ ...testEnv({ API_SHUTDOWN_NOTICE_MS: '0', ...env }), DATABASE_URL: databaseUrl });
    const { project } = await accountWithProject(new HttpClient(api.url));
    return { api, port: Number(new URL(api.url).port), project };
  }

  /** `count` keep-alive connections on `agent` that have each answered one request and now sit idle. */
  async function warmUp(port: number, agent: http.Agent, key: string, count: number) {
    const outcomes = await Promise.all(
      Array.from({ length: count }, (_, i) => trackRequest(port, agent, key, `warm${i}@example.com`, Promise.resolve()).outcome),
    );
    expect(tally(outcomes)).toEqual({ 'answered 200': count });
    expect(Object.values(agent.freeSockets).flat()).toHaveLength(count);
  }

  it('answers all 200 requests in flight, refuses new connections, closes idle keep-alive connections, then exits 0', async () => {
    // A grace no loaded machine runs out of (the 200 requests are answered only after the probes
    // below): its end, closing what is still open with a warning, is then what waiting on the idle
    // keep-alive connections would come to.
    const { api, port, project } = await startApi({ API_SHUTDOWN_GRACE_MS: '60000' });
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 150 });
    try {
      // 150 keep-alive connections: 100 carry the next requests, 50 stay idle through the shutdown.
      await warmUp(port, keepAlive, project.secretKey, 150);

      // 200 requests the API has accepted (it has read their heads and asked for the bodies);
      // half on fresh connections, half on the keep-alive ones. The bodies come after the signal.
      let releaseBodies!: () => void;
      const bodiesSent = new Promise<void>((resolve) => (releaseBodies = resolve));
      const requests = Array.from({ length: 200 }, (_, i) =>
        trackRequest(port, i % 2 ? keepAlive : false, project.secretKey, `inflight${i}@example.com`, bodiesSent),
      );
      await Promise.all(requests.map((r) => r.inFlight));

      api.kill('SIGTERM');
      await api.waitForLine((l) => l.msg === 'api shutting down: draining in-flight requests');
      // New connections while it drains, a few at a time: answered while it still takes what the
      // kernel had queued, refused once it has stopped listening; never accepted and then dropped.
      const probes: Outcome[] = [];
      for (let i = 0; i < 8; i++) {
        probes.push(await probe(port));
        await new Promise((r) => setTimeout(r, 250));
      }
      releaseBodies();

      const outcomes = await Promise.all(requests.map((r) => r.outcome));
      expect(tally(outcomes)).toEqual({ 'answered 200': 200 });
      // Keep-alive clients are told not to send another request on a connection that is closing.
      expect(outcomes.filter((o) => o.connection !== 'close')).toEqual([]);
      expectAnsweredThenRefused(probes);

      expect(await api.exited).toBe(0);
      // The idle keep-alive connections were closed once the requests were answered, not left open
      // until the grace period ended (which closes what is still open, and says so).
      expect(api.lines.filter((l) => String(l.msg).startsWith('shutdown grace period over'))).toEqual([]);
      expect(api.lines.some((l) => l.msg === 'api stopped')).toBe(true);
      // Every answered request did its work before the database pool closed.
      expect(await countEvents(databaseUrl, project.id)).toBe(350);
    } finally {
      keepAlive.destroy();
      api.kill('SIGKILL');
    }
  }, 180_000);

  it('answers or refuses, never resets, a burst of 300 requests when the signal comes with the first answers', async () => {
    // A long grace: on a loaded test machine the API takes seconds to accept a burst this size.
    const { api, port, project } = await startApi({ API_SHUTDOWN_GRACE_MS: '30000' });
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 100 });
    try {
      await warmUp(port, keepAlive, project.secretKey, 100);
      // A third on the idle keep-alive connections (written at once), the rest on new connections.
      const requests = Array.from(
        { length: 300 },
        (_, i) => trackRequest(port, i % 3 ? false : keepAlive, project.secretKey, `burst${i}@example.com`, Promise.resolve()).outcome,
      );
      // The signal as soon as the first answer is back: most of the burst is queued, being read or being answered.
      await Promise.race(requests);
      api.kill('SIGTERM');
      const outcomes = await Promise.all(requests);
      const counts = tally(outcomes);
      expect(Object.keys(counts).filter((k) => k !== 'answered 200' && !k.startsWith('refused'))).toEqual([]);
      expect(await api.exited).toBe(0);
      expect(await countEvents(databaseUrl, project.id)).toBe(100 + (counts['answered 200'] ?? 0));
    } finally {
      keepAlive.destroy();
      api.kill('SIGKILL');
    }
  }, 180_000);
  it('answers /health 503 "draining" from SIGTERM on while it still listens for API_SHUTDOWN_NOTICE_MS, answers the rest, then refuses', async () => {
    // The notice must outlast the log line reaching the test and the two probes after it, on a
    // loaded machine; the test waits it out to the refusal, so it is no longer than that needs.
    // The grace costs no time: the API exits once the request in flight is answered, and stops
    // listening once the probes below leave it 100 ms without a connection (not after half the grace).
    const { api, port, project } = await startApi({ API_SHUTDOWN_NOTICE_MS: '10000', API_SHUTDOWN_GRACE_MS: '60000' });
    try {
      expect(await probe(port)).toMatchObject({ kind: 'answered', status: 200 });
      // A request in flight at the signal: its body comes once /health has said "draining".
      let releaseBody!: () => void;
      const bodySent = new Promise<void>((resolve) => (releaseBody = resolve));
      const inFlight = trackRequest(port, false, project.secretKey, 'notice@example.com', bodySent);
      await inFlight.inFlight;

      api.kill('SIGTERM');
      await api.waitForLine((l) => l.msg === 'api shutting down: draining in-flight requests');
      // New connections are still accepted: the health check says 503 draining, other requests are answered, all with Connection: close.
      const health = await probe(port);
      expect(health).toMatchObject({ kind: 'answered', status: 503, connection: 'close' });
      expect(JSON.parse(health.body!)).toMatchObject({ status: 'draining' });
      expect(await probe(port, '/config')).toMatchObject({ kind: 'answered', status: 200, connection: 'close' });
      releaseBody();
      expect(await inFlight.outcome).toMatchObject({ kind: 'answered', status: 200, connection: 'close' });

      // Then, and only then, it stops listening: every probe until the refusal was answered 503.
      // The probes are further apart than the 100 ms without a connection it waits for.
      const probes: Outcome[] = [];
      for (;;) {
        const outcome = await probe(port);
        probes.push(outcome);
        if (outcome.kind !== 'answered' && outcome.kind !== 'reset') break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expectAnsweredThenRefused(probes, 503);
      expect(await api.exited).toBe(0);
      expect(await countEvents(databaseUrl, project.id)).toBe(1);
    } finally {
      api.kill('SIGKILL');
    }
  }, 180_000);
});
