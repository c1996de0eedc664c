/**
 * POST /v1/track throughput and latency: target ≥ 1,000 requests/s sustained with p99 < 50 ms at
 * 50 connections, against the local PostgreSQL, load generator on the same machine.
 *
 *   node --import tsx bench/track.ts [durationSeconds=20]
 *
 * Each request tracks an event for one of 20,000 emails (new contacts at first, upserts later)
 * with a few data fields, through the whole production path: key lookup, the rate limiter (set
 * high enough not to refuse, so it still does its work), validation, the contact upsert with the
 * event insert, and the event triggers.
 */
import autocannon from 'autocannon';
import { startBenchStack, printFigures } from './support/benchStack';
import { steadyLoad, type LoadResult } from './support/steadyLoad';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';

async function main() {
  const duration = Number(process.argv[2] ?? 20);
  const stack = await startBenchStack({ env: { RATE_LIMIT_PER_MINUTE: process.env.BENCH_RATE_LIMIT ?? '100000000' } });
  try {
    const { project } = await accountWithProject(new HttpClient(stack.apiUrl));
    let n = 0;
    const requestFor = () => {
      n++;
      return JSON.stringify({
        email: `user${n % 20_000}@bench.example`,
        event: n % 4 ? 'page_view' : 'purchase',
        data: { plan: n % 3 ? 'free' : 'pro', visits: n, source: 'bench' },
      });
    };
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` };
    // A steady rate open-loop (bench/support/steadyLoad.ts says why not autocannon's overallRate);
    // unthrottled, autocannon's 50 connections as fast as they are answered.
    const run = (seconds: number, rate?: number): Promise<LoadResult> =>
      rate
        ? steadyLoad({
            url: `${stack.apiUrl}/v1/track`,
            rate,
            duration: seconds,
            connections: 50,
            method: 'POST',
            headers,
            request: () => ({ body: requestFor() }),
          })
        : autocannon({
            url: `${stack.apiUrl}/v1/track`,
            connections: 50,
            duration: seconds,
            method: 'POST',
            headers,
            requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: requestFor() }) }],
          });
    const report = (title: string, result: LoadResult) =>
      printFigures(title, {
        'requests/s (mean)': Math.round(result.requests.average),
        'requests/s (min per second)': result.requests.min,
        'latency p50 (ms)': result.latency.p50,
        'latency p90 (ms)': result.latency.p90,
        'latency p99 (ms)': result.latency.p99,
        'latency max (ms)': result.latency.max,
        'non-2xx responses': result.non2xx,
        errors: result.errors + result.timeouts,
        'requests total': result.requests.total,
      });
    await run(3); // warm-up: JIT, connection pool, first contacts
    // The target: 1,000 requests/s offered evenly, and the latency at that load.
    report(`POST /v1/track at a steady 1,000 requests/s (open loop, up to 50 connections), ${duration} s`, await run(duration, 1000));
    // Headroom: as fast as 50 connections can go.
    report(`POST /v1/track unthrottled (capacity), 50 connections, ${Math.ceil(duration / 2)} s`, await run(Math.ceil(duration / 2)));
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
