/**
 * Login flood: what a burst of logins costs the rest of the API (issue 13, item 4).
 *
 *   node --import tsx bench/loginFlood.ts        (or: npm run bench:logins)
 *
 * First the cost of one password check in this process: argon2id with Mailroom's parameters
 * (new hashes) and bcrypt cost 11 (hashes made before argon2id, verified until the next login).
 * Then the API as a real child process (with Temporal and a worker, as `npm start` runs them):
 * one account, 20 warm-up logins, then rounds of 60 and 100 concurrent correct logins, each from its own client
 * address (X-Forwarded-For from loopback), while GET /health is polled every 50 ms. Printed: the
 * logins' latencies and /health's worst latency and statuses during each round.
 */
import { hash as bcryptHash } from '@node-rs/bcrypt';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { signUp } from '../test/support/accounts';
import { hashPassword, verifyPassword } from '../lib/passwords';

const ROUNDS = [60, 100];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function timePerCheck(hash: string, runs: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < runs; i++) await verifyPassword('correct horse battery', hash);
  return (performance.now() - started) / runs;
}

async function main() {
  const argon2 = await hashPassword('correct horse battery');
  const bcrypt = await bcryptHash('correct horse battery', 11);
  const figures: Record<string, string | number> = {
    'argon2id (m=19456 KiB, t=2, p=1) ms per check': Math.round(await timePerCheck(argon2, 10)),
    'bcrypt cost 11 (legacy) ms per check': Math.round(await timePerCheck(bcrypt, 5)),
  };

  const stack = await startBenchStack({ worker: true });
  try {
    const http = new HttpClient(stack.apiUrl);
    const account = await signUp(http);
    let client = 0;
    // A running API, not a cold one: compile the login path and open the pool's connections first.
    await Promise.all(
      Array.from({ length: 20 }, () =>
        http.post('/auth/login', { email: account.email, password: account.password }, { headers: { 'X-Forwarded-For': `192.0.2.${++client}` } }),
      ),
    );
    for (const logins of ROUNDS) {
      const health: Array<{ ms: number; status: number }> = [];
      let flooding = true;
      const poller = (async () => {
        while (flooding) {
          const started = performance.now();
          const res = await http.get('/health');
          health.push({ ms: performance.now() - started, status: res.status });
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: logins }, async () => {
          const from = `203.0.${Math.floor(client / 250)}.${(client++ % 250) + 1}`;
          const t = performance.now();
          const res = await http.post('/auth/login', { email: account.email, password: account.password }, { headers: { 'X-Forwarded-For': from } });
          return { ms: performance.now() - t, status: res.status };
        }),
      );
      const total = performance.now() - started;
      flooding = false;
      await poller;
      const latencies = results.map((r) => r.ms);
      figures[`${logins} logins: all 200`] = String(results.every((r) => r.status === 200));
      figures[`${logins} logins: total ms`] = Math.round(total);
      figures[`${logins} logins: login p50 / max ms`] = `${Math.round(percentile(latencies, 50))} / ${Math.round(Math.max(...latencies))}`;
      figures[`${logins} logins: /health polls, all 200`] = `${health.length}, ${health.every((h) => h.status === 200)}`;
      figures[`${logins} logins: /health p99 / max ms`] = `${Math.round(
        percentile(
          health.map((h) => h.ms),
          99,
        ),
      )} / ${Math.round(Math.max(...health.map((h) => h.ms)))}`;
    }
  } finally {
    await stack.stop();
  }
  printFigures('login flood', figures);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
