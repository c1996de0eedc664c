/**
 * Segment count: target — the memberCount of a three-group segment (a data equality, an event
 * triggeredWithin, an email activity filter) over 1,000,000 contacts and 5,000,000 events in
 * under 1 second, against the local PostgreSQL, the API as a real child process.
 *
 *   node --import tsx bench/segmentCount.ts        (or: npm run bench:segments)
 *
 * Creates a project through the API and inserts for it directly with SQL (generate_series, as
 * bench/contactSearch.ts does): 1,000,000 contacts with a small data object (plan among 5
 * values), 5,000,000 events (20 names, spread over the last 90 days, 5 per contact on average)
 * and 500,000 emails (sent over the last 90 days, 30% opened). VACUUM ANALYZEs, creates the
 * segment through POST /segments, then times POST /segments/:id/refresh (the recount, one query
 * through the condition compiler) over HTTP: 2 warm-ups, then 10 runs, for the segment's logic OR
 * (the three groups alternatives: every contact must be decided) and AND. The EXPLAIN (ANALYZE)
 * plan of the OR count is printed at the end.
 */
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { compileCondition } from '../db/conditions';

const CONTACTS = 1_000_000;
const EVENTS = 5_000_000;
const EMAILS = 500_000;
const CHUNK = 250_000;
const WARMUPS = 2;
const RUNS = 10;
const TARGET_MS = 1000;
const PLANS = ['free', 'starter', 'pro', 'team', 'enterprise'];
const EVENT_NAMES = Array.from({ length: 20 }, (_, i) => (i === 0 ? 'purchase' : `event-${i}`));

/** Deterministic pseudo-random column k of row n: a non-negative bigint. */
const h = (k: number) => `(hashint4extended(n, ${k}) & 9223372036854775807)`;

async function timed(label: string, run: () => Promise<unknown>) {
  const t = performance.now();
  await run();
  const s = (performance.now() - t) / 1000;
  console.log(`  ${label}: ${s.toFixed(1)} s`);
  return s;
}

async function seed(db: Client, projectId: string) {
  for (let from = 1; from <= CONTACTS; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, CONTACTS);
    await timed(`contacts ${to.toLocaleString('en')}`, () =>
      db.query(
        `insert into contacts (id, project_id, email, subscribed, data, created_at, updated_at)
         select md5('c' || n)::uuid, $1, 'user' || n || '@example.com', ${h(4)} % 20 <> 0,
                jsonb_build_object('plan', ($2::text[])[1 + ${h(5)} % ${PLANS.length}], 'score', ${h(6)} % 100),
                ts, ts
         from (select n, now() - (${h(8)} % (365 * 86400)) * interval '1 second' as ts from generate_series($3::int, $4::int) n) s`,
        [projectId, PLANS, from, to],
      ),
    );
  }
  for (let from = 1; from <= EVENTS; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, EVENTS);
    await timed(`events ${to.toLocaleString('en')}`, () =>
      db.query(
        `insert into events (project_id, contact_id, name, source, created_at)
         select $1, md5('c' || (1 + ${h(11)} % ${CONTACTS}))::uuid, ($2::text[])[1 + ${h(12)} % ${EVENT_NAMES.length}], 'API',
                now() - (${h(13)} % (90 * 86400)) * interval '1 second'
         from generate_series($3::int, $4::int) n`,
        [projectId, EVENT_NAMES, from, to],
      ),
    );
  }
  for (let from = 1; from <= EMAILS; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, EMAILS);
    await timed(`emails ${to.toLocaleString('en')}`, () =>
      db.query(
        `insert into emails (id, project_id, contact_id, source, type, subject, from_address, to_address, status, message_id, sent_at, opened_at, created_at)
         select gen_random_uuid(), $1, md5('c' || (1 + ${h(21)} % ${CONTACTS}))::uuid, 'CAMPAIGN', 'MARKETING', 'Hello', 'news@example.com', 'x@example.com',
                'SENT', 'm' || n, ts, case when ${h(22)} % 10 < 3 then ts + interval '1 hour' end, ts
         from (select n, now() - (${h(23)} % (90 * 86400)) * interval '1 second' as ts from generate_series($2::int, $3::int) n) s`,
        [projectId, from, to],
      ),
    );
  }
}

function quantile(sorted: number[], q: number) {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function main() {
  const stack = await startBenchStack({ env: { RATE_LIMIT_PER_MINUTE: '100000000' } });
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const key = { key: project.secretKey };

    console.log(`Seeding ${CONTACTS.toLocaleString('en')} contacts, ${EVENTS.toLocaleString('en')} events, ${EMAILS.toLocaleString('en')} emails…`);
    const tSeed = performance.now();
    await seed(db, project.id);
    const seedS = (performance.now() - tSeed) / 1000;
    const vacuumS = await timed('vacuum analyze', () => db.query('vacuum analyze contacts, events, emails'));
    printFigures('Seed', {
      contacts: CONTACTS.toLocaleString('en'),
      events: EVENTS.toLocaleString('en'),
      emails: EMAILS.toLocaleString('en'),
      'insert (s)': seedS.toFixed(1),
      'vacuum analyze (s)': vacuumS.toFixed(1),
    });

    const groups = [
      { filters: [{ field: 'data.plan', operator: 'equals', value: 'enterprise' }] },
      { filters: [{ field: 'event.purchase', operator: 'triggeredWithin', value: 7, unit: 'days' }] },
      { filters: [{ field: 'email.opened', operator: 'triggeredWithin', value: 30, unit: 'days' }] },
    ];
    const results: Array<{ logic: string; p50: number; p95: number; max: number; members: number; create: number }> = [];
    for (const logic of ['OR', 'AND'] as const) {
      const condition = { logic, groups };
      const t = performance.now();
      const created = await http.post('/segments', { name: `Bench ${logic}`, condition }, key);
      const createMs = performance.now() - t;
      if (created.status !== 201) throw new Error(`POST /segments answered ${created.status}: ${created.text}`);
      const samples: number[] = [];
      let members = 0;
      for (let i = 0; i < WARMUPS + RUNS; i++) {
        const start = performance.now();
        const res = await http.post(`/segments/${created.body.id}/refresh`, undefined, key);
        const ms = performance.now() - start;
        if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${res.text}`);
        if (i >= WARMUPS) samples.push(ms);
        members = res.body.memberCount;
      }
      samples.sort((a, b) => a - b);
      results.push({ logic, p50: quantile(samples, 0.5), p95: quantile(samples, 0.95), max: samples[samples.length - 1], members, create: createMs });
    }

    console.log(
      `\nPOST /segments/:id/refresh (memberCount) over ${CONTACTS.toLocaleString('en')} contacts / ${EVENTS.toLocaleString('en')} events: ${RUNS} runs after ${WARMUPS} warm-ups, client-side ms (target < ${TARGET_MS} ms)`,
    );
    console.log(`  ${'logic'.padEnd(6)} ${'p50'.padStart(8)} ${'p95'.padStart(8)} ${'max'.padStart(8)} ${'create'.padStart(8)}  members`);
    for (const r of results) {
      console.log(
        `  ${r.logic.padEnd(6)} ${r.p50.toFixed(0).padStart(8)} ${r.p95.toFixed(0).padStart(8)} ${r.max.toFixed(0).padStart(8)} ${r.create.toFixed(0).padStart(8)}  ${r.members.toLocaleString('en')}  ${r.p95 < TARGET_MS ? 'ok' : 'MISS'}`,
      );
    }

    // A tracked segment: creation writes its members page by page (the same path as /compute and
    // the 5-minute schedule), each page's condition evaluated per contact.
    const tTracked = performance.now();
    const tracked = await http.post('/segments', { name: 'Bench tracked', trackMembership: true, condition: { logic: 'OR', groups } }, key);
    const trackedS = (performance.now() - tTracked) / 1000;
    if (tracked.status !== 201) throw new Error(`tracked POST /segments answered ${tracked.status}: ${tracked.text}`);
    const tCompute = performance.now();
    const computed = await http.post(`/segments/${tracked.body.id}/compute`, undefined, key);
    const computeS = (performance.now() - tCompute) / 1000;
    printFigures('Tracked segment (logic OR), members written page by page', {
      'create with baseline (s)': trackedS.toFixed(1),
      members: tracked.body.memberCount.toLocaleString('en'),
      'compute, nothing changed (s)': computeS.toFixed(1),
      'compute answer': JSON.stringify(computed.body),
    });

    // The count exactly as the compiler builds it (knex `?` turned into $n for pg).
    const compiled = compileCondition({ logic: 'OR', groups } as never, { projectId: project.id });
    let n = 1;
    const sql = `select count(*) from contacts c where c.project_id = $${n++} and ${compiled.sql.replace(/\?/g, () => `$${n++}`)}`;
    const plan = (await db.query(`explain (analyze, buffers) ${sql}`, [project.id, ...compiled.params])).rows.map((r) => r['QUERY PLAN'] as string);
    console.log(`\nEXPLAIN (ANALYZE, BUFFERS), logic OR\n  ${sql.replace(/\s+/g, ' ')}`);
    for (const line of plan) console.log(`  | ${line}`);
  } finally {
    await db.end();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
