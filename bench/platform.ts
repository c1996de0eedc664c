/**
 * Platform figures that tests do not assert (tests check that things happen, never how fast or
 * how big): how fast /health answers while Temporal is away and how soon Mailroom takes work
 * again when it comes back, how close to its timeout a webhook attempt ends, what refusing a
 * 1 GB body costs the API's memory, how the rate limiter behaves over 70 real seconds, and what
 * the track path costs in statements for a project without workflows.
 *
 *   node --import tsx bench/platform.ts [section …]      (or: npm run bench:platform)
 *
 * Sections, all by default: health, webhook, body, statements, limiter (the last takes 70 s).
 * The API runs as real child processes (as `npm start` runs it) on a fresh database, with a
 * Temporal dev server this script starts, stops and restarts on a port of its own.
 */
import http from 'node:http';
import http2 from 'node:http2';
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';
import { startBenchStack, printFigures, servicesFrom, type BenchStack } from './support/benchStack';
import { startTemporalDevServer, type TemporalDevServer } from '../launcher/temporalDevServer';
import { findFreePort } from '../lib/freePort';
import { spawnApi, type ChildService } from '../test/support/processes';
import { HttpClient, type HttpResponse } from '../test/support/http';
import { accountWithProject, type TestProject } from '../test/support/accounts';
import { startWebhookReceiver } from '../test/support/webhookReceiver';
import { maxInAnyWindow } from '../test/support/windows';
import { createDnsResolver } from '../lib/dns/dnsResolver';
import { sendWebhook, WebhookError } from '../lib/webhooks/webhookRequest';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalBinary } = require('../scripts/temporal-binary.cjs');

const SECTIONS = ['health', 'webhook', 'body', 'statements', 'limiter'] as const;
type Section = (typeof SECTIONS)[number];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n)}`;
const mb = (bytes: number) => (bytes / (1024 * 1024)).toFixed(1);

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

/** Polls `check` every 50 ms until it is true; the milliseconds it took. */
async function until(check: () => Promise<boolean>, limitMs = 120_000): Promise<number> {
  const started = performance.now();
  while (!(await check().catch(() => false))) {
    if (performance.now() - started > limitMs) throw new Error(`not within ${limitMs} ms`);
    await sleep(50);
  }
  return performance.now() - started;
}

/** A Temporal that takes connections and gRPC calls and never answers (hung, or behind a black hole). */
async function startHungTemporal(port: number) {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined);
  });
  server.on('stream', (stream) => stream.on('error', () => undefined));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    async close() {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** /health `count` times, `gapMs` apart: latencies and the statuses seen. */
async function healthLatencies(api: HttpClient, count: number, gapMs: number) {
  const latencies: number[] = [];
  const statuses = new Set<number>();
  for (let i = 0; i < count; i++) {
    const { value, ms: took } = await timed(() => api.get('/health'));
    latencies.push(took);
    statuses.add(value.status);
    await sleep(gapMs);
  }
  return `${ms(percentile(latencies, 50))} / ${ms(Math.max(...latencies))} ms (${count} requests, status ${[...statuses].join(', ')})`;
}

async function healthSection(
  stack: BenchStack,
  temporalPort: number,
  figures: Record<string, string | number>,
): Promise<{ temporal: TemporalDevServer; project: TestProject }> {
  const api = new HttpClient(stack.apiUrl);
  const binaryPath = ensureTemporalBinary();
  // 1. Nothing listens at Temporal's address (the API was started so).
  figures['/health, nothing at Temporal: p50 / max'] = await healthLatencies(api, 20, 150);
  // 2. A Temporal that takes connections and never answers.
  const hung = await startHungTemporal(temporalPort);
  await sleep(1500); // the API's connection finds it (reconnects are at most a second apart)
  figures['/health, hung Temporal: p50 / max'] = await healthLatencies(api, 20, 150);
  await hung.close();
  // 3. Temporal starts: how long until /health says so.
  let temporal = await startTemporalDevServer({ binaryPath, port: temporalPort, uiPort: false, namespace: 'default' });
  figures['Temporal up → /health ok'] = `${ms(await until(async () => (await api.get('/health')).body.status === 'ok'))} ms`;
  const { project } = await accountWithProject(api);
  const startsWork = async () =>
    (await api.post('/contacts/bulk-subscribe', { contactIds: ['00000000-0000-4000-8000-000000000000'] }, { key: project.secretKey })).status === 202;
  await until(startsWork);
  // 4. Temporal restarts after 3 s away (its state kept, as a real cluster's is).
  const restarts: Array<{ health: number; work: number }> = [];
  for (let round = 0; round < 3; round++) {
    await temporal.stop();
    await until(async () => (await api.get('/health')).body.status === 'degraded');
    await sleep(3000);
    temporal = await startTemporalDevServer({ binaryPath, port: temporalPort, uiPort: false, namespace: 'default' });
    const started = performance.now();
    await until(async () => (await api.get('/health')).body.status === 'ok');
    const health = performance.now() - started;
    await until(startsWork);
    restarts.push({ health, work: performance.now() - started });
  }
  figures['restart → /health ok (3 rounds)'] = `${restarts.map((r) => ms(r.health)).join(', ')} ms`;
  figures['restart → work accepted (202)'] = `${restarts.map((r) => ms(r.work)).join(', ')} ms`;
  return { temporal, project };
}

async function webhookSection(figures: Record<string, string | number>) {
  const receiver = await startWebhookReceiver();
  receiver.on('/silent', () => undefined);
  const resolver = createDnsResolver({ servers: ['127.0.0.1:1'], timeoutMs: 500, tries: 1 });
  try {
    for (const timeoutMs of [300, 1000]) {
      const late: number[] = [];
      for (let i = 0; i < 20; i++) {
        const started = performance.now();
        const outcome = await sendWebhook({ resolver, url: `${receiver.url}/silent`, body: '{}', allowPrivate: true, timeoutMs }).catch((err: unknown) => err);
        if (!(outcome instanceof WebhookError) || outcome.kind !== 'TIMEOUT') throw new Error(`expected a TIMEOUT, got ${String(outcome)}`);
        late.push(performance.now() - started - timeoutMs);
      }
      figures[`webhook timeoutMs ${timeoutMs}: ended after timeout + min / p50 / max`] =
        `${ms(Math.min(...late))} / ${ms(percentile(late, 50))} / ${ms(Math.max(...late))} ms (20 attempts)`;
    }
  } finally {
    await receiver.close();
  }
}

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/**
 * Streams `total` bytes from `chunk()` to the API as fast as it takes them, to the end whatever
 * the API answers (the worst a client can do), while the API's RSS is sampled every 10 ms.
 */
async function sendHugeBody(apiUrl: string, pid: number, headers: Record<string, string>, total: number, chunk: (offset: number) => Buffer) {
  const rssBefore = rssOf(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssOf(pid))), 10);
  const started = performance.now();
  let sent = 0;
  let answer: { status: number; atBytes: number; ms: number } | undefined;
  await new Promise<void>((resolve) => {
    const req = http.request(`${apiUrl}/auth/login`, { method: 'POST', headers, agent: false });
    req.on('response', (res) => {
      answer = { status: res.statusCode ?? 0, atBytes: sent, ms: performance.now() - started };
      res.resume();
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    const pump = () => {
      while (sent < total) {
        const piece = chunk(sent).subarray(0, total - sent);
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  await sleep(500);
  const rssAfter = rssOf(pid);
  return {
    answer: answer ? `${answer.status} after ${mb(answer.atBytes)} MB sent, ${ms(answer.ms)} ms` : 'none',
    taken: `${mb(sent)} MB in ${seconds.toFixed(1)} s`,
    rss: `${mb(rssBefore)} / ${mb(rssPeak)} / ${mb(rssAfter)} MB (+${mb(rssPeak - rssBefore)})`,
  };
}

async function bodySection(stack: BenchStack, figures: Record<string, string | number>) {
  const GB = 1024 * 1024 * 1024;
  const json = { 'Content-Type': 'application/json' };
  const spaces = Buffer.alloc(256 * 1024, ' ');
  const plain = await sendHugeBody(stack.apiUrl, stack.pids.api, { ...json, 'Transfer-Encoding': 'chunked' }, GB, () => spaces);
  figures['1 GB chunked body: answer'] = plain.answer;
  figures['1 GB chunked body: sent in all'] = plain.taken;
  figures['1 GB chunked body: API RSS before / peak / after'] = plain.rss;
  // 1 GB of zeros as 1,024 gzip members of 1 MB (about 1 MB on the wire), its length declared.
  const member = zlib.gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
  const members = Buffer.concat(Array(64).fill(member));
  const bombBytes = member.length * 1024;
  const bomb = await sendHugeBody(
    stack.apiUrl,
    stack.pids.api,
    { ...json, 'Content-Encoding': 'gzip', 'Content-Length': String(bombBytes) },
    bombBytes,
    () => members,
  );
  figures['gzip bomb (1 GB decoded): answer'] = bomb.answer;
  figures['gzip bomb: sent in all'] = bomb.taken;
  figures['gzip bomb: API RSS before / peak / after'] = bomb.rss;
  figures['/health after both'] = (await new HttpClient(stack.apiUrl).get('/health')).status;
}

async function statementCounts(api: ChildService): Promise<Record<string, number>> {
  const seen = api.lines.filter((l) => l.msg === 'statement counts').length;
  api.process.kill('SIGUSR2');
  await api.waitForLine((l) => l.msg === 'statement counts' && Number(l.seq) === seen + 1, 10_000);
  return api.lines.filter((l) => l.msg === 'statement counts').at(-1)!.counts as Record<string, number>;
}

async function statementsSection(stack: BenchStack, figures: Record<string, string | number>) {
  const counter = path.join(__dirname, 'support', 'countStatements.cjs');
  const api = await spawnApi({ ...stack.env, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0' }, ['--require', counter], servicesFrom);
  try {
    const client = new HttpClient(api.url);
    const { project: quiet } = await accountWithProject(client);
    const tracks = async (project: TestProject, event: string, count: number, concurrency: number) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < count) {
            const i = next++;
            const res = await client.post('/v1/track', { email: `visitor${i}@bench.example`, event }, { key: project.publicKey });
            if (res.status !== 200) throw new Error(`track answered ${res.status}: ${res.text}`);
          }
        }),
      );
    };
    await tracks(quiet, 'warm-up', 50, 10);
    const before = await statementCounts(api);
    const { ms: took } = await timed(() => tracks(quiet, 'page-view', 600, 10));
    const after = await statementCounts(api);
    const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
    const seconds = took / 1000;
    figures['project without workflows: tracks'] = `600 in ${seconds.toFixed(1)} s (10 at a time)`;
    figures['statements per track'] = (delta('total') / 600).toFixed(2);
    figures['workflow-name lookups'] = `${delta('workflows')} (${(delta('workflows') / seconds).toFixed(1)} a second)`;
    figures['statements on workflow_executions'] = delta('workflow_executions');
  } finally {
    api.kill();
    await api.exited;
  }
}

async function limiterSection(stack: BenchStack, figures: Record<string, string | number>) {
  const env = { ...stack.env, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000' };
  const apis = await Promise.all([spawnApi(env, [], servicesFrom), spawnApi(env, [], servicesFrom)]);
  try {
    const clients = apis.map((api) => new HttpClient(api.url));
    const { project } = await accountWithProject(clients[0]);
    const warmUp = await accountWithProject(clients[1]);
    await Promise.all(clients.map((c) => c.get('/outbox', { key: warmUp.project.secretKey })));
    // 20 a second (1,200 a minute against 1,000), alternating between the processes, each sent on
    // schedule whether or not the ones before it have been answered.
    const start = Date.now() + 100;
    const sent = await Promise.all(
      Array.from(
        { length: 1400 },
        (_, i) =>
          new Promise<{ at: number; res: HttpResponse }>((resolve, reject) =>
            setTimeout(
              () => {
                const at = Date.now();
                clients[i % 2].get('/outbox', { key: project.secretKey }).then((res) => resolve({ at, res }), reject);
              },
              start + i * 50 - Date.now(),
            ),
          ),
      ),
    );
    const accepted = sent.filter((s) => s.res.status === 200).map((s) => s.at);
    const refused = sent.filter((s) => s.res.status === 429);
    const retryAfter = refused.map((s) => Number(s.res.headers.get('retry-after')));
    figures['limiter: sent / accepted / refused'] = `1,400 / ${accepted.length} / ${refused.length} (other: ${sent.length - accepted.length - refused.length})`;
    figures['limiter: most accepted in any 60 s'] = `${maxInAnyWindow(accepted, 60_000)} (limit 1,000; client send times)`;
    figures['limiter: accepted in the first 60 s'] = accepted.filter((t) => t < start + 60_000).length;
    figures['limiter: accepted from 62 s on'] =
      `${accepted.filter((t) => t >= start + 62_000).length} (of ${sent.filter((s) => s.at >= start + 62_000).length} sent)`;
    figures['limiter: Retry-After min / max'] = retryAfter.length ? `${Math.min(...retryAfter)} / ${Math.max(...retryAfter)} s` : 'none refused';
  } finally {
    for (const api of apis) {
      api.kill();
      await api.exited;
    }
  }
}

async function main() {
  const asked = process.argv.slice(2) as Section[];
  for (const name of asked) if (!SECTIONS.includes(name)) throw new Error(`unknown section ${name}; one of ${SECTIONS.join(', ')}`);
  const run = (section: Section) => !asked.length || asked.includes(section);
  const temporalPort = await findFreePort();
  const stack = await startBenchStack({ env: { TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}` } });
  let temporal: TemporalDevServer | undefined;
  const figures: Record<string, string | number> = {};
  try {
    if (run('health')) ({ temporal } = await healthSection(stack, temporalPort, figures));
    if (run('webhook')) await webhookSection(figures);
    if (run('body')) await bodySection(stack, figures);
    if (run('statements')) await statementsSection(stack, figures);
    if (run('limiter')) await limiterSection(stack, figures);
  } finally {
    await stack.stop();
    await temporal?.stop();
  }
  printFigures('platform', figures);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
