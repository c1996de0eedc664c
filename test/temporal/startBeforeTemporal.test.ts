/**
 * Mailroom started before Temporal, against a fresh server where nobody created its namespace or
 * search attributes: API and worker wait (saying so in JSON), answer /health naming Temporal
 * while it is away (the API 200 `degraded`: it stays in service, contract 2; the worker 503) (nothing listening, or a Temporal that takes connections and never
 * answers), become healthy when Temporal answers, set the namespace up themselves, import a CSV
 * to the last row, and after a Temporal restart accept work again.
 *
 * Nothing here is timed: an answer counts by arriving with the right status and reason (a /health
 * that waited on a hung Temporal would never answer, and the test's own timeout ends it). How
 * fast /health answers while Temporal is down and how soon work is accepted again are figures of
 * `npm run bench:platform`.
 */
import http2 from 'node:http2';
import { startTemporalDevServer, type TemporalDevServer } from '../../launcher/temporalDevServer';
import { findFreePort } from '../../lib/freePort';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnService, type ChildService } from '../support/processes';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script, without types to import
const { ensureTemporalBinary } = require('../../scripts/temporal-binary.cjs');

const NAMESPACE = 'mailroom-selfsetup';
const ROWS = 300;

let databaseUrl: string;
let api: (ChildService & { url: string }) | undefined;
let worker: ChildService | undefined;
let temporal: TemporalDevServer | undefined;

afterAll(async () => {
  for (const child of [api, worker]) child?.kill();
  await Promise.all([api?.exited, worker?.exited]);
  await hung?.close();
  await temporal?.stop();
  if (databaseUrl) await dropTestDatabase(databaseUrl);
});

/**
 * A Temporal that is there and never answers (hung, or behind a black hole): an HTTP/2 server on
 * its port that takes connections and gRPC calls and leaves every call unanswered.
 */
async function startHungTemporal(port: number) {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  const calls: Array<{ path: string; userAgent: string }> = [];
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined);
  });
  server.on('stream', (stream, headers) => {
    calls.push({ path: String(headers[':path']), userAgent: String(headers['user-agent']) });
    stream.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    calls: () => calls,
    async close() {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let address: string;
let port: number;
let http: HttpClient;
let workerHealth: HttpClient;
let hung: Awaited<ReturnType<typeof startHungTemporal>> | undefined;
const down = { status: 'degraded', database: 'ok', temporal: 'down' };

it('waits for Temporal, saying so, and answers /health 200 degraded naming Temporal while nothing listens at its address', async () => {
  port = await findFreePort();
  address = `127.0.0.1:${port}`;
  const workerHealthPort = await findFreePort();
  databaseUrl = await createTestDatabase();
  const env = {
    ...testEnv({ TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: NAMESPACE, TEMPORAL_CREATE_NAMESPACE: 'true', WORKER_HEALTH_PORT: String(workerHealthPort) }),
    DATABASE_URL: databaseUrl,
  };
  const apiProcess = spawnService('api/main.ts', env);
  worker = spawnService('worker/main.ts', env);
  const listening = await apiProcess.waitForLine((l) => l.msg === 'api listening', 120_000);
  api = Object.assign(apiProcess, { url: `http://127.0.0.1:${Number(listening.port)}` });
  http = new HttpClient(api.url);
  workerHealth = new HttpClient(`http://127.0.0.1:${workerHealthPort}`);

  const waiting = (l: Record<string, unknown>) => l.msg === `waiting for Temporal at ${address}`;
  await api.waitForLine(waiting, 60_000);
  await worker.waitForLine(waiting, 120_000);
  for (let i = 0; i < 3; i++) {
    const res = await http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(down);
    await new Promise((resolve) => setTimeout(resolve, 600)); // past the one-second cache now and then
  }
  expect((await workerHealth.get('/health')).body).toEqual({ status: 'degraded', worker: 'STARTING', temporal: 'down' });
}, 300_000);

it('answers /health 200 degraded naming Temporal while Temporal takes connections and never answers', async () => {
  hung = await startHungTemporal(port);
  // Until the API's health probe (GetSystemInfo, from grpc-js; the worker's SDK core is another
  // client) is among the calls left hanging, /health may still have answered from a refused
  // connection; from then on its answers come while Temporal is there and silent.
  const apiProbed = () => hung!.calls().some((c) => c.path.endsWith('/GetSystemInfo') && c.userAgent.includes('grpc-node-js'));
  await eventually(
    async () => {
      expect((await http.get('/health')).body).toEqual(down);
      return apiProbed();
    },
    60_000,
    250,
  );
  for (let i = 0; i < 3; i++) {
    const res = await http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(down);
    await new Promise((resolve) => setTimeout(resolve, 600)); // past the one-second cache now and then
  }
  expect((await workerHealth.get('/health')).status).toBe(503);
  await hung.close();
  hung = undefined;
}, 180_000); // well above its waits: up to 60 s for the probe to hang, then a few /health answers

it('sets the namespace up itself once Temporal answers, imports to the last row, and accepts work again after a Temporal restart', async () => {
  // A fresh server: no Mailroom namespace, no search attributes.
  temporal = await startTemporalDevServer({ binaryPath: ensureTemporalBinary(), port, namespace: 'default', searchAttributes: false });
  await eventually(async () => (await http.get('/health')).body.status === 'ok', 120_000, 100);
  expect((await http.get('/health')).body).toEqual({ status: 'ok', database: 'ok', temporal: 'ok' });

  const { project } = await accountWithProject(http);
  const csv = ['email,firstName', ...Array.from({ length: ROWS }, (_, i) => `fresh${i}@example.com,Row${i}`)].join('\n');
  const accepted = await eventually(
    async () => {
      const res = await uploadFile(api!.url, '/contacts/import', project.secretKey, { name: 'c.csv', content: csv });
      if (res.status !== 202) throw new Error(`import answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res;
    },
    30_000,
    250,
  );
  const job = await eventually(
    async () => {
      const r = await http.get(`/contacts/import/${accepted.body.jobId}`, { key: project.secretKey });
      if (r.body.status !== 'COMPLETED') throw new Error(`still ${r.body.status}`);
      return r.body;
    },
    120_000,
    250,
  );
  expect(job).toMatchObject({ status: 'COMPLETED', total: ROWS });
  expect((await http.get(`/contacts?email=fresh${ROWS - 1}@example.com`, { key: project.secretKey })).status).toBe(200);

  // Whichever process came first created the namespace and registered the attributes.
  const all = [...api!.lines, ...worker!.lines];
  expect(all).toContainEqual(expect.objectContaining({ event: 'temporal.namespace_created', namespace: NAMESPACE }));
  expect(all).toContainEqual(expect.objectContaining({ event: 'temporal.search_attributes_registered', namespace: NAMESPACE }));
  await eventually(async () => (await workerHealth.get('/health')).status === 200, 30_000);

  // Temporal restarts (with its state, as a real cluster keeps it): degraded while down, work again after.
  await temporal.stop();
  await eventually(async () => (await http.get('/health')).body.status === 'degraded', 30_000, 100);
  expect((await http.get('/health')).body).toEqual(down);
  await new Promise((resolve) => setTimeout(resolve, 3000)); // long enough for reconnect backoff to grow
  temporal = await startTemporalDevServer({ binaryPath: ensureTemporalBinary(), port, namespace: NAMESPACE });
  await eventually(
    async () => {
      const res = await http.post('/contacts/bulk-subscribe', { contactIds: ['00000000-0000-4000-8000-000000000000'] }, { key: project.secretKey });
      if (res.status !== 202) throw new Error(`bulk answered ${res.status}`);
      return res;
    },
    120_000,
    100,
  );

  // The worker's stdout stayed JSON throughout, the SDK core's own warnings included.
  for (const line of worker!.stdout) expect(() => JSON.parse(line)).not.toThrow();
  for (const line of api!.stdout) expect(() => JSON.parse(line)).not.toThrow();
  expect(worker!.lines).toContainEqual(expect.objectContaining({ source: 'temporal', sdkComponent: 'core', target: expect.any(String) }));
}, 400_000);
