/**
 * POST /v1/send: target ≥ 300 requests/s (one recipient each) with p99 < 100 ms, and the worker
 * delivering them DKIM-signed to a local SMTP sink at the same rate without a growing backlog.
 * Load generator, API, worker, Temporal dev server, PostgreSQL and the sink share this 2-core
 * machine.
 *
 *   node --import tsx bench/send.ts [durationSeconds=30] [shape=both|batch|per-email] [rate=300, 0 = as fast as it answers]
 *
 * `batch` runs with the default DELIVERY_BATCH_MAX (delivery workflows carrying the emails
 * accepted together); `per-email` with DELIVERY_BATCH_MAX=1 (one `send-<emailId>` workflow per
 * email). Every second it prints accepted/s, delivered/s (emails recorded SENT) and the backlog
 * (accepted, not yet sent); after the load it waits for the backlog to drain.
 */
import crypto from 'node:crypto';
import autocannon from 'autocannon';
import { startBenchStack, printFigures } from './support/benchStack';
import { steadyLoad, type LoadResult, type SteadyLoadResult } from './support/steadyLoad';
import { cpuSnapshot, cpuPerUnit, cpuLine } from './support/processCpu';
import { rowWriteSnapshot, rowWritesPerUnit } from './support/rowWrites';
import { statementCosts, statementCostsSkipped } from './support/statementCosts';
import { startSmtpSink } from './support/smtpSink';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { startTestDnsServer } from '../test/support/dnsServer';
import { createOrm } from '../db/orm';
import { dkimVerify } from 'mailauth/lib/dkim/verify';

async function runShape(shape: 'batch' | 'per-email', duration: number, rate: number) {
  const dns = await startTestDnsServer();
  const sink = await startSmtpSink();
  const stack = await startBenchStack({
    worker: true,
    env: {
      RATE_LIMIT_PER_MINUTE: '100000000',
      SMTP_URL: sink.url,
      DNS_SERVERS: dns.address,
      ...(shape === 'per-email' ? { DELIVERY_BATCH_MAX: '1' } : {}),
    },
  });
  const orm = await createOrm(stack.databaseUrl);
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const domain = `bench-${crypto.randomBytes(3).toString('hex')}.example.com`;
    const added = await http.post('/domains', { domain }, { key: project.secretKey });
    const dkim = added.body.records.find((r: { purpose: string }) => r.purpose === 'DKIM');
    dns.setTxt(dkim.name, [dkim.value]);
    const verified = await http.get(`/domains/${added.body.id}/verify`, { key: project.secretKey });
    if (verified.body.status !== 'VERIFIED') throw new Error('the bench domain did not verify');

    let n = 0;
    const body = () => {
      n++;
      return JSON.stringify({
        to: `reader${n}@bench.example`,
        from: { name: 'Bench', email: `hello@${domain}` },
        subject: 'Order {{order}} confirmed',
        body: '<p>Hello {{name}}, your order {{order}} ships today. <a href="https://shop.example/orders/{{order}}">Track it</a></p>',
        data: { name: `Reader ${n}`, order: `A-${n}` },
      });
    };
    const counts = async () => {
      const [row] = await orm.em
        .fork()
        .execute(`select count(*)::int as accepted, count(*) filter (where status = 'SENT')::int as sent from emails where project_id = ?`, [project.id]);
      return row as { accepted: number; sent: number };
    };

    // Warm-up: JIT, pools, the first workflow tasks. At a fixed rate, that rate for
    // BENCH_WARMUP_SECONDS (15 by default): a fresh stack answers its first seconds of an even
    // load two to three times slower (p99 100-170 ms a second against 20-60 after), which is
    // start-up, not the steady rate the target names. Its figures are printed, not hidden.
    const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 15);
    const sendHeaders = { 'content-type': 'application/json', authorization: `Bearer ${project.secretKey}` };
    if (rate > 0 && warmupSeconds > 0) {
      // Each warm-up second's CPU by process: which one a fresh stack's slow start waits on.
      const warmCpu: string[] = [];
      let cpuBefore = cpuSnapshot();
      const cpuSampler = setInterval(() => {
        const now = cpuSnapshot();
        warmCpu.push(`  ${String(warmCpu.length + 1).padStart(3)} s  ${cpuLine(cpuBefore, now)}`);
        cpuBefore = now;
      }, 1000);
      const warm = await steadyLoad({
        url: `${stack.apiUrl}/v1/send`,
        rate,
        duration: warmupSeconds,
        connections: 50,
        method: 'POST',
        headers: sendHeaders,
        request: () => ({ body: body() }),
      });
      clearInterval(cpuSampler);
      console.log(
        `warm-up: ${warmupSeconds} s at ${rate}/s, p50 ${warm.latency.p50} ms, p99 ${warm.latency.p99} ms, non-2xx ${warm.non2xx}; p99 by second ${warm.p99BySecond.join(' ')}`,
      );
      console.log(`warm-up CPU by second:\n${warmCpu.join('\n')}`);
    } else {
      await autocannon({
        url: `${stack.apiUrl}/v1/send`,
        connections: 10,
        amount: 200,
        method: 'POST',
        headers: sendHeaders,
        requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: body() }) }],
      });
    }
    for (let waited = 0; waited < 60; waited++) {
      const c = await counts();
      if (c.sent >= c.accepted) break;
      await new Promise((r) => setTimeout(r, 1000));
    }

    const writesAtStart = await rowWriteSnapshot(orm);
    const statements = await statementCosts(orm);
    if ('reset' in statements) await statements.reset();
    else console.log(statementCostsSkipped(statements));
    const start = await counts();
    const sinkAtStart = sink.counts;
    const timeline: string[] = [];
    let last = start;
    let second = 0;
    const sampler = setInterval(() => {
      void counts().then(
        (c) => {
          second++;
          timeline.push(
            `${String(second).padStart(3)} s  accepted/s ${String(c.accepted - last.accepted).padStart(4)}  delivered/s ${String(c.sent - last.sent).padStart(4)}  backlog ${c.accepted - c.sent}`,
          );
          last = c;
        },
        () => undefined,
      ); // an unthrottled load can keep the sampler from a connection for a second: skip that sample
    }, 1000);
    const cpuAtStart = cpuSnapshot();
    const headers = sendHeaders;
    // A steady rate is offered open-loop (bench/support/steadyLoad.ts says why not autocannon's
    // overallRate); as fast as it answers, autocannon's 50 connections.
    const result: LoadResult =
      rate > 0
        ? await steadyLoad({ url: `${stack.apiUrl}/v1/send`, rate, duration, connections: 50, method: 'POST', headers, request: () => ({ body: body() }) })
        : await autocannon({
            url: `${stack.apiUrl}/v1/send`,
            connections: 50,
            duration,
            method: 'POST',
            headers,
            requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: body() }) }],
          });
    const loadEnded = Date.now();
    const cpuAtLoadEnd = cpuSnapshot();
    const atLoadEnd = await counts();
    let drained = atLoadEnd;
    while (drained.sent < drained.accepted && Date.now() - loadEnded < 120_000) {
      await new Promise((r) => setTimeout(r, 250));
      drained = await counts();
    }
    const drainSeconds = (Date.now() - loadEnded) / 1000;
    clearInterval(sampler);
    // What the sends and their deliveries wrote (webhook messages aside, as in bench:campaign).
    const writesAtEnd = await rowWriteSnapshot(orm);
    console.log(`\n${shape}: per-second timeline`);
    for (const line of timeline) console.log(`  ${line}`);

    const accepted = atLoadEnd.accepted - start.accepted;
    // How many delivery workflows the load made (each is a start and a workflow task for Temporal).
    const [{ workflows }] = await orm.em
      .fork()
      .execute(`select count(distinct delivery_workflow_id)::int as workflows from emails where project_id = ? and created_at >= ?`, [
        project.id,
        new Date(loadEnded - duration * 1000 - 1000),
      ]);
    const delivered = drained.sent - start.sent;
    printFigures(
      `POST /v1/send, ${shape === 'batch' ? 'batched delivery workflows' : 'one workflow per email'}, ${rate > 0 ? `${rate} requests/s offered evenly (open loop, up to 50 connections)` : 'as fast as answered, 50 connections'}, ${duration} s`,
      {
        'accepted requests/s (mean)': Math.round(result.requests.average),
        'latency p50 (ms)': result.latency.p50,
        'latency p90 (ms)': result.latency.p90,
        'latency p99 (ms)': result.latency.p99,
        'latency max (ms)': result.latency.max,
        'non-2xx responses': result.non2xx,
        errors: result.errors + result.timeouts,
        'emails accepted': accepted,
        'delivered during the load': atLoadEnd.sent - start.sent,
        'delivered/s during the load': Math.round((atLoadEnd.sent - start.sent) / duration),
        'backlog at the end of the load': atLoadEnd.accepted - atLoadEnd.sent,
        'seconds to drain it': drainSeconds.toFixed(1),
        'delivered/s overall (load + drain)': Math.round(delivered / (duration + drainSeconds)),
        'messages the sink received': sink.received - sinkAtStart.received,
        'of them to a recipient seen before': sink.counts.duplicates - sinkAtStart.duplicates,
        'delivery workflows started': workflows,
        'emails per delivery workflow': (accepted / Math.max(1, workflows)).toFixed(1),
        // During the load, per accepted send (delivery running beside it is counted too).
        ...Object.fromEntries(Object.entries(cpuPerUnit(cpuAtStart, cpuAtLoadEnd, accepted)).map(([k, v]) => [k.replace('per mail', 'per send'), v])),
        ...Object.fromEntries(
          Object.entries(await rowWritesPerUnit(orm, writesAtStart, writesAtEnd, delivered, ['webhook_messages'])).map(([k, v]) => [
            k.replace('per mail', 'per send'),
            v,
          ]),
        ),
        ...('perUnit' in statements
          ? Object.fromEntries(
              Object.entries(await statements.perUnit(delivered)).map(([k, v]) => [k.replace('per mail', 'per send'), v.replace('a mail', 'a send')]),
            )
          : {}),
      },
    );
    // Where the tail came from: a p99 made by a few seconds' stall reads differently from one spread over the run.
    if ('p99BySecond' in result) console.log(`  p99 by second of the load (ms)     ${(result as SteadyLoadResult).p99BySecond.join(' ')}`);
    const sample = sink.sample('Subject: Order');
    if (sample) {
      const { results } = await dkimVerify(sample, {
        resolver: async (name: string) => {
          if (name === dkim.name) return [[dkim.value]];
          throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
        },
      });
      const signature = /^DKIM-Signature: .*$/m.exec(sample.toString())?.[0]?.slice(0, 80) ?? 'no DKIM-Signature header';
      console.log(
        `  DKIM of a sampled message           ${results.map((r: { status: { result: string; comment?: string } }) => `${r.status.result}${r.status.comment ? ` (${r.status.comment})` : ''}`).join(', ')} [${signature}]`,
      );
    }
  } finally {
    await orm.close();
    await stack.stop();
    await sink.close();
    await dns.close();
  }
}

async function main() {
  const duration = Number(process.argv[2] ?? 30);
  const shape = process.argv[3] ?? 'both';
  const rate = Number(process.argv[4] ?? 300);
  if (shape === 'both' || shape === 'batch') await runShape('batch', duration, rate);
  if (shape === 'both' || shape === 'per-email') await runShape('per-email', duration, rate);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
