/**
 * An open-loop HTTP load at a steady rate, for the benches whose target is a latency at a given
 * rate (`bench:send`, `bench:track`, `bench:webhooks`). Request i is due at start + i / rate,
 * whatever the earlier answers did, and its latency runs from that due time to the end of its
 * answer: a server that falls behind is charged for the wait it causes (no coordinated omission),
 * and every request is one sample.
 *
 * autocannon's `overallRate` measures something else. Each connection sends its share of a
 * second's requests back to back when its own one-second timer fires, and the connections' timers
 * start together, so "300 a second" arrives as a burst at the top of every second. It then records
 * each latency L as L samples, one per millisecond below it (its expected interval,
 * `Math.ceil(1 / rate)` with the per-connection rate in requests a second, comes to 1 ms), which
 * weights the percentiles by the latency itself. Unthrottled runs (no rate) still use autocannon.
 */
import http from 'node:http';

export interface SteadyLoadOptions {
  url: string;
  /** Requests a second, spread evenly. */
  rate: number;
  /** Seconds of load. */
  duration: number;
  /** Sockets kept open to the server at most; a request due while all are busy waits for one (and its wait counts). */
  connections: number;
  method?: string;
  headers?: Record<string, string>;
  /** Each request's body (and path, when not the URL's), made when it is due; `onAnswer` hears its status. */
  request?: () => { body?: string; path?: string; onAnswer?: (status: number) => void };
  /** A request with no complete answer by then counts as a timeout (default 10 s, as autocannon's). */
  timeoutMs?: number;
}

/** The figures the benches print, named as autocannon names them. */
export interface LoadResult {
  requests: { average: number; min: number; total: number };
  latency: { p50: number; p90: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** steadyLoad's figures: LoadResult's, and the count of 2xx answers (which autocannon's types leave out). */
export interface SteadyLoadResult extends LoadResult {
  '2xx': number;
  /** The p99 latency (ms) of the requests due in each second of the load: where in the run the tail came from. */
  p99BySecond: number[];
}

export async function steadyLoad(options: SteadyLoadOptions): Promise<SteadyLoadResult> {
  const url = new URL(options.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const total = Math.round(options.rate * options.duration);
  const intervalMs = 1000 / options.rate;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const latencies: number[] = [];
  /** Latencies by the second their request was due in. */
  const bySecond: number[][] = Array.from({ length: Math.ceil(options.duration) }, () => []);
  const answeredPerSecond = new Array<number>(Math.ceil(options.duration) + 1).fill(0);
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  const pending = new Set<Promise<void>>();
  let lastAnswerAt = 0;
  const start = performance.now();

  const send = (due: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const made = options.request?.() ?? {};
      let settled = false;
      const settle = (outcome: 'answered' | 'error' | 'timeout', status?: number) => {
        if (settled) return;
        settled = true;
        const now = performance.now();
        if (outcome === 'answered') {
          lastAnswerAt = now;
          latencies.push(now - due);
          bySecond[Math.min(bySecond.length - 1, Math.floor((due - start) / 1000))]?.push(now - due);
          made.onAnswer?.(status!);
          if (status! < 200 || status! > 299) non2xx++;
          const second = Math.floor((now - start) / 1000);
          if (second < answeredPerSecond.length) answeredPerSecond[second]++;
        } else if (outcome === 'timeout') timeouts++;
        else errors++;
        resolve();
      };
      const body = made.body === undefined ? undefined : Buffer.from(made.body);
      const req = http.request(
        {
          agent,
          hostname: url.hostname,
          port: url.port,
          path: made.path ?? `${url.pathname}${url.search}`,
          method: options.method ?? 'GET',
          headers: { ...options.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () => settle('answered', res.statusCode));
          res.on('error', () => settle('error'));
        },
      );
      req.setTimeout(timeoutMs, () => {
        settle('timeout');
        req.destroy();
      });
      req.on('error', () => settle('error'));
      req.end(body);
    });

  // Fire every request whose time has come, then sleep until the next one is due.
  let next = 0;
  while (next < total) {
    const now = performance.now();
    while (next < total && start + next * intervalMs <= now) {
      const p = send(start + next * intervalMs);
      pending.add(p);
      void p.then(() => pending.delete(p));
      next++;
    }
    if (next < total) await new Promise((r) => setTimeout(r, Math.max(0, start + next * intervalMs - performance.now())));
  }
  await Promise.all(pending);
  agent.destroy();

  const quantile = (values: number[], q: number) => {
    const sorted = Float64Array.from(values).sort();
    return sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]) : 0;
  };
  const at = (q: number) => quantile(latencies, q);
  const fullSeconds = answeredPerSecond.slice(0, Math.floor(options.duration));
  return {
    requests: {
      // Over the load, or until the last answer when the server fell behind (the rate it kept up).
      average: latencies.length / Math.max(options.duration, (lastAnswerAt - start) / 1000),
      min: fullSeconds.length ? Math.min(...fullSeconds) : 0,
      total: latencies.length,
    },
    latency: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
    '2xx': latencies.length - non2xx,
    p99BySecond: bySecond.map((values) => quantile(values, 0.99)),
    non2xx,
    errors,
    timeouts,
  };
}
