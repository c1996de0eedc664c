/**
 * Outbound webhooks (contract 18, issue 38) under load. Targets: the healthy endpoint receives each
 * message within 5 s of its event (p99); /v1/track's p99 rises by less than 50 % with three
 * endpoints; a campaign's rate drops by less than 15 % with an `email.*` endpoint. API, worker,
 * Temporal dev server, PostgreSQL, the receivers (their own process) and this load generator share
 * the 2-core machine.
 *
 *   node --import tsx bench/webhooks.ts [seconds=60] [eventsPerSecond=200] [campaignContacts=20000] [campaignRounds=1]
 *   (seconds 0 skips the tracking part, campaignContacts 0 the campaigns; BENCH_WEBHOOK_SLOW_MS: the slow receiver's delay, 20000)
 *
 * 1. Tracking: `POST /v1/track` at a steady rate into a project whose 20,000 contacts exist (so no
 *    contact.subscribed events ride along), first without endpoints (the baseline), then, in the
 *    same stack right after, with three `*` endpoints: one answering 200 at once, one 500, one only
 *    after 20 s (past the 15 s an attempt may take). Prints the healthy endpoint's delay from event
 *    (`data.event.createdAt`) to receipt, whether every message arrived once, /v1/track's latency
 *    both ways, the failing endpoints' attempts and pending messages, the delivery worker's RSS every 5 s (the webhooks process),
 *    and the CPU of each process per event both ways and the difference per webhook message.
 * 2. Campaigns: bench:campaign's campaign (runCampaignBench) without an endpoint, then with an
 *    `email.*` endpoint at the healthy receiver, back to back, each on a fresh stack; the rates and
 *    the drop.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { steadyLoad, type SteadyLoadResult } from './support/steadyLoad';
import { startBenchStack, printFigures, type BenchStack } from './support/benchStack';
import { cpuSnapshot, type CpuSnapshot } from './support/processCpu';
import { runCampaignBench } from './campaign';
import { HttpClient } from '../test/support/http';
import { accountWithProject, type TestProject } from '../test/support/accounts';
import { createOrm, type Orm } from '../db/orm';

type ReceiverName = 'ok' | 'fail' | 'slow';
interface ReceiverCounts {
  requests: number;
  distinct: number;
  open: number;
  maxOpen: number;
}

/** The receivers' process (support/webhookReceiverProcess.ts) and what it has reported so far. */
async function startReceivers(slowMs: number) {
  const child = fork(path.join(__dirname, 'support', 'webhookReceiverProcess.ts'), [String(slowMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let counts: Record<ReceiverName, ReceiverCounts> | null = null;
  let duplicates = 0;
  /** Every `ok` receipt: [event createdAt, received at], epoch ms. */
  const receipts: Array<[number, number]> = [];
  const reported: Array<() => void> = [];
  const ports = await new Promise<Record<ReceiverName, number>>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the webhook receivers exited (${code})`)));
    child.on('message', (m: { ports?: Record<ReceiverName, number>; counts?: typeof counts; duplicates?: number; receipts?: Array<[number, number]> }) => {
      if (m.ports) resolve(m.ports);
      if (m.counts) {
        counts = m.counts;
        duplicates = m.duplicates!;
        for (const r of m.receipts!) receipts.push(r);
        reported.splice(0).forEach((done) => done());
      }
    });
  });
  child.removeAllListeners('exit');
  const zero = { requests: 0, distinct: 0, open: 0, maxOpen: 0 };
  return {
    pid: child.pid!,
    url: (name: ReceiverName) => `http://127.0.0.1:${ports[name]}/hook`,
    counts: (name: ReceiverName): ReceiverCounts => ({ ...(counts?.[name] ?? zero) }),
    get duplicates() {
      return duplicates;
    },
    receipts,
    /** Resolves once a report sent after this call has arrived (every receipt so far is in `receipts`). */
    flush: () =>
      new Promise<void>((resolve) => {
        reported.push(resolve);
        child.send({ flush: true });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}
type Receivers = Awaited<ReturnType<typeof startReceivers>>;

function rssMb(pid: number): number {
  try {
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
  } catch {
    return 0;
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] : NaN;
}

/** Delay from event to receipt for the receipts of events created in [from, to). */
function delays(receipts: Array<[number, number]>, from: number, to = Infinity) {
  const ms = receipts
    .filter(([createdAt]) => createdAt >= from && createdAt < to)
    .map(([createdAt, at]) => at - createdAt)
    .sort((a, b) => a - b);
  return { n: ms.length, p50: percentile(ms, 0.5), p95: percentile(ms, 0.95), p99: percentile(ms, 0.99), max: ms[ms.length - 1] ?? NaN };
}

async function createEndpoint(http: HttpClient, project: TestProject, url: string, events: string[]): Promise<string> {
  const res = await http.post('/webhook-endpoints', { url, events }, { key: project.secretKey });
  if (res.status !== 201) throw new Error(`endpoint creation answered ${res.status}: ${res.text}`);
  return res.body.id as string;
}

interface EndpointState {
  pending: number;
  succeeded: number;
  failed: number;
  attempts: number;
}

async function endpointStates(orm: Orm, ids: string[]): Promise<Map<string, EndpointState>> {
  const rows: Array<{ endpoint_id: string; pending: number; succeeded: number; failed: number; attempts: number }> = await orm.em.fork().execute(
    `select endpoint_id,
       count(*) filter (where status = 'PENDING')::int as pending,
       count(*) filter (where status = 'SUCCEEDED')::int as succeeded,
       count(*) filter (where status = 'FAILED')::int as failed,
       coalesce(sum(attempt_count), 0)::int as attempts
     from webhook_messages where endpoint_id = any(?::uuid[]) group by endpoint_id`,
    [`{${ids.join(',')}}`],
  );
  const states = new Map(ids.map((id) => [id, { pending: 0, succeeded: 0, failed: 0, attempts: 0 }]));
  for (const r of rows) states.set(r.endpoint_id, { pending: r.pending, succeeded: r.succeeded, failed: r.failed, attempts: r.attempts });
  return states;
}

/**
 * Samples once a second while a phase runs: the delivery worker's RSS, and every 5 s a timeline line with
 * the healthy receiver's progress, its delay in those 5 s, the failing receivers' requests and the
 * endpoints' pending messages.
 */
function startTimeline(stack: BenchStack, receivers: Receivers, orm: Orm, endpoints: Record<ReceiverName, string> | null, lines: string[]) {
  const startedAt = Date.now();
  const rss: Array<[number, number]> = [];
  let lastOk = receivers.counts('ok').requests;
  let lastReceipt = receivers.receipts.length;
  let tick = 0;
  let busy = false;
  const timer = setInterval(() => {
    tick++;
    rss.push([Date.now(), rssMb(stack.pids.webhooks ?? stack.pids.worker!)]);
    if (tick % 5 || busy) return;
    if (!endpoints) {
      lines.push(`${String(Math.round((Date.now() - startedAt) / 1000)).padStart(4)} s  delivery worker RSS ${rss[rss.length - 1][1]} MB`);
      return;
    }
    busy = true;
    void (async () => {
      const ok = receivers.counts('ok');
      const window = receivers.receipts.slice(lastReceipt).map(([c, at]) => at - c);
      window.sort((a, b) => a - b);
      lastReceipt = receivers.receipts.length;
      const states = await endpointStates(orm, Object.values(endpoints));
      const pending = `  pending ${(['ok', 'fail', 'slow'] as const).map((n) => states.get(endpoints[n])!.pending).join(' / ')}`;
      lines.push(
        `${String(Math.round((Date.now() - startedAt) / 1000)).padStart(4)} s  healthy ${String(ok.requests).padStart(6)} (+${Math.round((ok.requests - lastOk) / 5)}/s, p99 ${percentile(window, 0.99)} ms)` +
          `  500: ${receivers.counts('fail').requests}  slow: ${receivers.counts('slow').requests}${pending}  delivery worker RSS ${rss[rss.length - 1][1]} MB`,
      );
      lastOk = ok.requests;
    })().finally(() => (busy = false));
  }, 1000);
  return {
    rss,
    stop: () => clearInterval(timer),
  };
}

/** MB per minute of a least-squares line through the samples. */
function slopeMbPerMinute(samples: Array<[number, number]>): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mx = samples.reduce((a, [t]) => a + t, 0) / n;
  const my = samples.reduce((a, [, v]) => a + v, 0) / n;
  const num = samples.reduce((a, [t, v]) => a + (t - mx) * (v - my), 0);
  const den = samples.reduce((a, [t]) => a + (t - mx) ** 2, 0);
  return (num / den) * 60_000;
}

interface CpuSpan {
  byKind: Map<string, number>;
  busy: number;
  idle: number;
}

/** This process and its descendants: the API, worker, Temporal dev server and receivers this bench started. */
function ownProcesses(): Set<string> {
  const parentOf = new Map<string, string>();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      parentOf.set(pid, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  const own = new Set([String(process.pid)]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, parent] of parentOf)
      if (!own.has(pid) && own.has(parent)) {
        own.add(pid);
        grew = true;
      }
  }
  return own;
}

/**
 * CPU seconds by process kind (bench/support/processCpu.ts's kinds), with the receivers' process
 * (a `bench/` command line) apart from the load generator, and what is not this bench's (another
 * helper's jest: its API, worker, Temporal and PostgreSQL backends of its own database) as `other`.
 */
function cpuSpan(from: CpuSnapshot, to: CpuSnapshot, receiverPid: number, databaseUrl: string): CpuSpan {
  const own = ownProcesses();
  const database = new URL(databaseUrl).pathname.slice(1);
  const byKind = new Map<string, number>();
  for (const [pid, now] of to.byPid) {
    const used = now.seconds - (from.byPid.get(pid)?.seconds ?? 0); // a process started in between counts from zero
    let kind: string = now.kind;
    if (pid === String(receiverPid)) kind = 'receiver';
    else if (kind === 'postgres') {
      // Backends name their database; the server's own processes (writer, checkpointer) count as the bench's.
      const named = /mailroom_\w+/.exec(now.command)?.[0];
      if (named && named !== database) kind = 'other';
    } else if (!own.has(pid)) kind = 'other';
    byKind.set(kind, (byKind.get(kind) ?? 0) + used);
  }
  return { byKind, busy: to.machine.busy - from.machine.busy, idle: to.machine.idle - from.machine.idle };
}

/** The bench database's committed transactions, and row writes by table (PostgreSQL's statistics, flushed within a second). */
async function databaseCounters(orm: Orm) {
  const [db]: Array<{ commits: string }> = await orm.em
    .fork()
    .execute(`select xact_commit as commits from pg_stat_database where datname = current_database()`);
  const tables: Array<{ relname: string; ins: string; upd: string; hot: string }> = await orm.em
    .fork()
    .execute(
      `select relname, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relname in ('webhook_messages', 'webhook_endpoints')`,
    );
  const writes = new Map(tables.map((t) => [t.relname, { inserts: Number(t.ins), updates: Number(t.upd), hot: Number(t.hot) }]));
  return { commits: Number(db.commits), writes: (table: string) => writes.get(table) ?? { inserts: 0, updates: 0, hot: 0 } };
}

/**
 * What the bench database's active backends are doing, sampled every 50 ms over a span: each
 * sample counts every active backend once by what it waits for (CPU when nothing) and the start
 * of its statement. Where /v1/track's tail comes from when the cores are not all taken.
 */
function startWaitSampler(orm: Orm) {
  const counts = new Map<string, number>();
  let samples = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const rows: Array<{ what: string; n: number }> = await orm.em.fork().execute(
        `select coalesce(wait_event_type || ':' || wait_event, 'on CPU') || '  ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 50) as what, count(*)::int as n
           from pg_stat_activity
          where datname = current_database() and state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'
          group by 1`,
      );
      samples++;
      for (const r of rows) counts.set(r.what, (counts.get(r.what) ?? 0) + r.n);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    async stop(): Promise<string[]> {
      stopped = true;
      await done;
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      return [
        `${samples} samples, ${(total / Math.max(samples, 1)).toFixed(2)} active backends a sample on average; the most frequent (share of backend-samples):`,
        ...[...counts.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 8)
          .map(([what, n]) => `  ${((100 * n) / total).toFixed(1).padStart(5)} %  ${what}`),
      ];
    },
  };
}

async function trackPart(seconds: number, rate: number, slowMs: number) {
  const receivers = await startReceivers(slowMs);
  const stack = await startBenchStack({ worker: true, env: { RATE_LIMIT_PER_MINUTE: '100000000', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const orm = await createOrm(stack.databaseUrl);
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    // The contacts exist before, so each request records its tracked event and nothing else.
    await orm.em
      .fork()
      .execute(`insert into contacts (project_id, email, subscribed) select ?, 'user' || g || '@bench.example', true from generate_series(0, 19999) g`, [
        project.id,
      ]);
    await orm.em.fork().execute('vacuum analyze contacts');
    let n = 0;
    const requestFor = () => {
      n++;
      return JSON.stringify({
        email: `user${n % 20_000}@bench.example`,
        event: n % 4 ? 'page_view' : 'purchase',
        data: { plan: n % 3 ? 'free' : 'pro', visits: n, source: 'bench' },
      });
    };
    // Open-loop at a steady rate (bench/support/steadyLoad.ts says why not autocannon's overallRate).
    const track = (duration: number) =>
      steadyLoad({
        url: `${stack.apiUrl}/v1/track`,
        rate,
        duration,
        connections: 50,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` },
        request: () => ({ body: requestFor() }),
      });
    type TrackResult = SteadyLoadResult;
    const measured = async (endpoints: Record<ReceiverName, string> | null) => {
      const lines: string[] = [];
      const timeline = startTimeline(stack, receivers, orm, endpoints, lines);
      const requestsAtReceivers = () => (['ok', 'fail', 'slow'] as const).reduce((n, name) => n + receivers.counts(name).requests, 0);
      const countersFrom = await databaseCounters(orm);
      const attemptsFrom = requestsAtReceivers();
      const from = cpuSnapshot();
      const waits = startWaitSampler(orm);
      const startedAt = Date.now();
      const result = await track(seconds);
      const endedAt = Date.now();
      const databaseWaits = await waits.stop();
      const cpu = cpuSpan(from, cpuSnapshot(), receivers.pid, stack.databaseUrl);
      const commits = (await databaseCounters(orm)).commits - countersFrom.commits;
      const attempts = requestsAtReceivers() - attemptsFrom;
      return {
        result,
        cpu,
        startedAt,
        endedAt,
        timeline,
        lines,
        commits,
        attempts,
        countersFrom,
        databaseWaits,
        events: result['2xx'],
      };
    };
    const latencyFigures = (result: TrackResult) => ({
      'requests/s (mean)': Math.round(result.requests.average),
      'track latency p50 / p90 / p99 (ms)': `${result.latency.p50} / ${result.latency.p90} / ${result.latency.p99}`,
      'track latency max (ms)': result.latency.max,
      'non-2xx responses, errors': `${result.non2xx}, ${result.errors + result.timeouts}`,
    });

    // Warm-up: JIT, connection pools. After 3 s the baseline's p99 still came out above the loaded
    // run's (97 against 51 ms on 2026-11-28): too little to tell a rise from a cold start.
    await track(10);
    const rssAtStart = rssMb(stack.pids.webhooks ?? stack.pids.worker!);
    console.log(`\nBaseline: ${rate} events/s for ${seconds} s, no endpoint`);
    const baseline = await measured(null);
    baseline.timeline.stop();
    for (const line of baseline.lines) console.log(`  ${line}`);
    printFigures(`POST /v1/track at ${rate}/s for ${seconds} s, no webhook endpoint (baseline)`, {
      ...latencyFigures(baseline.result),
      'events tracked': baseline.events,
    });

    const endpoints: Record<ReceiverName, string> = {
      ok: await createEndpoint(http, project, receivers.url('ok'), ['*']),
      fail: await createEndpoint(http, project, receivers.url('fail'), ['*']),
      slow: await createEndpoint(http, project, receivers.url('slow'), ['*']),
    };
    // The endpoints' delivery workflows start with their first messages: not part of the measured span.
    await track(3);
    console.log(`\nWith three endpoints (200 at once, 500, ${slowMs / 1000} s): ${rate} events/s for ${seconds} s; every 5 s`);
    const loaded = await measured(endpoints);
    const atEnd = await endpointStates(orm, Object.values(endpoints));
    const rssAtEnd = rssMb(stack.pids.webhooks ?? stack.pids.worker!);
    const slowAtEnd = receivers.counts('slow');
    const failAtEnd = receivers.counts('fail');

    // The healthy endpoint drains: every message SUCCEEDED and received (bounded).
    const drainStarted = Date.now();
    let drained = false;
    while (Date.now() - drainStarted < Math.max(120_000, seconds * 2000)) {
      const ok = (await endpointStates(orm, [endpoints.ok])).get(endpoints.ok)!;
      if (ok.pending === 0 && receivers.counts('ok').distinct >= ok.succeeded) {
        drained = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    await receivers.flush();
    loaded.timeline.stop();
    for (const line of loaded.lines) console.log(`  ${line}`);
    const states = await endpointStates(orm, Object.values(endpoints));
    const ok = states.get(endpoints.ok)!;
    const countersAfter = await databaseCounters(orm);
    const d = delays(receivers.receipts, loaded.startedAt, loaded.endedAt);
    const lastReceipt = Math.max(0, ...receivers.receipts.map(([, at]) => at));
    const rssDuring = loaded.timeline.rss.filter(([t]) => t <= loaded.endedAt);
    printFigures(`POST /v1/track at ${rate}/s for ${seconds} s, three webhook endpoints`, {
      ...latencyFigures(loaded.result),
      'events tracked': loaded.events,
      'track p99 against the baseline': `${loaded.result.latency.p99} vs ${baseline.result.latency.p99} ms (${signedPercent(loaded.result.latency.p99, baseline.result.latency.p99)})`,
    });
    printFigures('Healthy endpoint (200 at once)', {
      'delay event → receipt p50 / p95 / p99': `${d.p50} / ${d.p95} / ${d.p99} ms`,
      'delay event → receipt max': `${d.max} ms`,
      'receipts of the measured span': d.n,
      'messages / SUCCEEDED / pending': `${ok.succeeded + ok.pending + ok.failed} / ${ok.succeeded} / ${ok.pending}`,
      'received (distinct) / duplicates': `${receivers.counts('ok').distinct} / ${receivers.duplicates}`,
      'every message arrived once': drained && receivers.counts('ok').distinct === ok.succeeded && receivers.duplicates === 0 ? 'yes' : 'NO',
      'last receipt after the load ended': `${((lastReceipt - loaded.endedAt) / 1000).toFixed(1)} s`,
      'requests open at once at the receiver': receivers.counts('ok').maxOpen,
    });
    for (const [name, title, receiverAtEnd] of [
      ['fail', 'Endpoint answering 500', failAtEnd],
      ['slow', `Endpoint answering after ${slowMs / 1000} s`, slowAtEnd],
    ] as const) {
      const s = atEnd.get(endpoints[name])!;
      printFigures(`${title}, when the load ended`, {
        'messages / pending / FAILED': `${s.pending + s.succeeded + s.failed} / ${s.pending} / ${s.failed}`,
        'attempts recorded': s.attempts,
        'requests at the receiver (distinct messages)': `${receiverAtEnd.requests} (${receiverAtEnd.distinct})`,
        'requests open at once at the receiver': receiverAtEnd.maxOpen,
      });
    }
    printFigures('Worker memory', {
      'RSS before the baseline (MB)': rssAtStart,
      'RSS at the start of the loaded run (MB)': rssDuring[0]?.[1] ?? 0,
      'RSS peak during the loaded run (MB)': Math.max(...rssDuring.map(([, v]) => v)),
      'RSS when the load ended (MB)': rssAtEnd,
      'RSS after the drain (MB)': rssMb(stack.pids.webhooks ?? stack.pids.worker!),
      'RSS trend during the loaded run': `${slopeMbPerMinute(rssDuring).toFixed(1)} MB/min`,
    });
    const rowWrites = (table: string) => {
      const before = loaded.countersFrom.writes(table);
      const after = countersAfter.writes(table);
      const updates = after.updates - before.updates;
      return { inserts: after.inserts - before.inserts, updates, hotShare: updates ? Math.round((100 * (after.hot - before.hot)) / updates) : 0 };
    };
    const messageWrites = rowWrites('webhook_messages');
    const endpointWrites = rowWrites('webhook_endpoints');
    printFigures('PostgreSQL (the bench database)', {
      'transactions per event, baseline': (baseline.commits / baseline.events).toFixed(2),
      'transactions per event, endpoints': (loaded.commits / loaded.events).toFixed(2),
      'webhook attempts during the run': loaded.attempts,
      'more transactions per attempt': ((loaded.commits - (baseline.commits / baseline.events) * loaded.events) / loaded.attempts).toFixed(2),
      'webhook_messages rows: inserted, updated': `${messageWrites.inserts}, ${messageWrites.updates} (${messageWrites.hotShare} % HOT), to the drain`,
      'webhook_endpoints rows updated': `${endpointWrites.updates} (${endpointWrites.hotShare} % HOT)`,
    });
    console.log(`\nCPU per event by process (ms), ${seconds} s each, and the difference per webhook message (3 per event)`);
    console.log(`  ${'process'.padEnd(22)} ${'baseline'.padStart(10)} ${'endpoints'.padStart(10)} ${'per message'.padStart(12)}`);
    const kinds = [...new Set([...loaded.cpu.byKind.keys(), ...baseline.cpu.byKind.keys()])].sort(
      (a, b) => (loaded.cpu.byKind.get(b) ?? 0) - (loaded.cpu.byKind.get(a) ?? 0),
    );
    const row = (name: string, base: number, withEndpoints: number) =>
      console.log(
        `  ${name.padEnd(22)} ${((base * 1000) / baseline.events).toFixed(3).padStart(10)} ${((withEndpoints * 1000) / loaded.events).toFixed(3).padStart(10)} ${(((withEndpoints / loaded.events - base / baseline.events) * 1000) / 3).toFixed(3).padStart(12)}`,
      );
    for (const kind of kinds) row(kind === 'other' ? 'other (not this bench)' : kind, baseline.cpu.byKind.get(kind) ?? 0, loaded.cpu.byKind.get(kind) ?? 0);
    row('all', baseline.cpu.busy, loaded.cpu.busy);
    const idle = (c: CpuSpan) => `${Math.round((100 * c.idle) / (c.busy + c.idle))} %`;
    console.log(`  machine idle: ${idle(baseline.cpu)} baseline, ${idle(loaded.cpu)} with endpoints`);
    console.log("\nThe bench database's active backends, sampled every 50 ms, baseline");
    for (const line of baseline.databaseWaits) console.log(`  ${line}`);
    console.log('The same with the endpoints');
    for (const line of loaded.databaseWaits) console.log(`  ${line}`);
  } finally {
    await orm.close();
    await stack.stop();
    await receivers.close();
  }
}

function signedPercent(value: number, base: number): string {
  const change = Math.round((100 * (value - base)) / base);
  return `${change >= 0 ? '+' : ''}${change} %`;
}

async function campaignPart(contacts: number, rounds: number, slowMs: number) {
  const receivers = await startReceivers(slowMs);
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true' };
  const rates: { without: number[]; with: number[] } = { without: [], with: [] };
  try {
    for (let round = 1; round <= rounds; round++) {
      console.log(`\n=== Campaign to ${contacts.toLocaleString('en')} contacts without a webhook endpoint (round ${round} of ${rounds})`);
      rates.without.push((await runCampaignBench(contacts, 1, { env })).mailsPerSecond);

      console.log(`\n=== The same campaign with an email.* endpoint answering 200 at once (round ${round} of ${rounds})`);
      let endpoint: { id: string; orm: Orm } | null = null;
      const run = await runCampaignBench(contacts, 1, {
        env,
        beforeSend: async ({ http, project, orm }) => {
          endpoint = { id: await createEndpoint(http, project, receivers.url('ok'), ['email.*']), orm };
        },
        afterSend: async (sent) => {
          const { id, orm } = endpoint!;
          await receivers.flush();
          const byLastMail = receivers.receipts.filter(([c, at]) => c >= sent.startedAt && at <= sent.lastAt).length;
          const waitStarted = Date.now();
          let state = (await endpointStates(orm, [id])).get(id)!;
          while (state.pending > 0 && Date.now() - waitStarted < 300_000) {
            await new Promise((r) => setTimeout(r, 250));
            state = (await endpointStates(orm, [id])).get(id)!;
          }
          await receivers.flush();
          const mine = receivers.receipts.filter(([c]) => c >= sent.startedAt);
          const d = delays(mine, sent.startedAt);
          printFigures('Its email.* endpoint', {
            'messages / SUCCEEDED / pending': `${state.succeeded + state.pending + state.failed} / ${state.succeeded} / ${state.pending}`,
            'received by the last mail': byLastMail,
            'last receipt after the send call (s)': ((Math.max(...mine.map(([, at]) => at)) - sent.startedAt) / 1000).toFixed(2),
            'delay event → receipt p50 / p95 / p99 (ms)': `${d.p50} / ${d.p95} / ${d.p99}`,
            'requests open at once at the receiver': receivers.counts('ok').maxOpen,
          });
        },
      });
      rates.with.push(run.mailsPerSecond);
    }
  } finally {
    await receivers.close();
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  printFigures(`Campaign to ${contacts.toLocaleString('en')} contacts, with an email.* endpoint vs without (back to back)`, {
    'mails/s without an endpoint': rates.without.map(Math.round).join(', '),
    'mails/s with an email.* endpoint': rates.with.map(Math.round).join(', '),
    'drop (means)': `${((100 * (mean(rates.without) - mean(rates.with))) / mean(rates.without)).toFixed(1)} %`,
  });
}

async function main() {
  const seconds = Number(process.argv[2] ?? 60);
  const rate = Number(process.argv[3] ?? 200);
  const contacts = Number(process.argv[4] ?? 20_000);
  const rounds = Number(process.argv[5] ?? 1);
  const slowMs = Number(process.env.BENCH_WEBHOOK_SLOW_MS ?? 20_000);
  if (seconds > 0) await trackPart(seconds, rate, slowMs);
  if (contacts > 0) await campaignPart(contacts, rounds, slowMs);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
