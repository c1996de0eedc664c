/**
 * Analytics: targets — GET /analytics/timeseries (a year by day) and GET /activity/stats < 50 ms
 * each, GET /activity first page < 30 ms, on a project with 5,000,000 emails and 5,000,000 events
 * spread over a year; the API as a real child process, timed over HTTP.
 *
 *   node --import tsx bench/analytics.ts        (or: npm run bench:analytics)
 *
 * First measures what the rollup triggers cost the hot write paths, in SQL on the fresh database,
 * with the triggers on and off interleaved (same statements, same machine moment): a /v1/track
 * batch (one INSERT of 250 events) and a single track, a send's INSERT of 100 emails, a delivery
 * batch (one UPDATE of 100 emails to SENT), an open (one UPDATE of one email, as the pixel does).
 * BENCH_ANALYTICS_ONLY=triggers stops after this part.
 *
 * Then seeds with SQL generate_series in chunks of 500,000 rows: 50,000 contacts, 5,000,000 emails
 * (70 % TRANSACTIONAL, 25 % CAMPAIGN over 50 campaigns, 5 % WORKFLOW; 97 % sent, 60 % delivered,
 * 25 % opened, 5 % clicked, 1 % bounced) and 5,000,000 events (20 names) over the last 365 days.
 * The rollups are built by the production triggers themselves (each INSERT statement's trigger
 * aggregates its 500,000 rows into the counters), not by a separate script. VACUUM ANALYZE, then
 * 3 warm-ups and 30 timed requests per endpoint. The database is dropped at the end.
 */
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';

const CONTACTS = 50_000;
const EMAILS = 5_000_000;
const EVENTS = 5_000_000;
const CAMPAIGNS = 50;
const CHUNK = 500_000;
const WARMUPS = 3;
const RUNS = 30;
const EVENT_NAMES = [
  ...Array.from({ length: 16 }, (_, i) => (i === 0 ? 'purchase' : `event-${i}`)),
  'email.sent',
  'email.opened',
  'email.clicked',
  'contact.subscribed',
];

/** Deterministic pseudo-random column k of row n: a non-negative bigint. */
const h = (k: number) => `(hashint4extended(n, ${k}) & 9223372036854775807)`;

async function timed<T>(label: string, run: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const result = await run();
  console.log(`  ${label}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return result;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

/** ms of one transaction running `statement` (as the API runs them). */
async function oneTransaction(db: Client, statement: () => Promise<unknown>) {
  const t = performance.now();
  await db.query('begin');
  await statement();
  await db.query('commit');
  return performance.now() - t;
}

const TRIGGERS = [
  ['events', 'analytics_events_inserted'],
  ['emails', 'analytics_emails_inserted'],
  ['emails', 'analytics_emails_updated'],
] as const;

async function setTriggers(db: Client, enabled: boolean) {
  for (const [table, trigger] of TRIGGERS) await db.query(`alter table ${table} ${enabled ? 'enable' : 'disable'} trigger ${trigger}`);
}

/**
 * The same write with the rollup triggers on and off, interleaved (on, off, off, on, …) so that
 * both arms see the same machine load; the toggling itself is not timed.
 */
async function triggerCost(db: Client, projectId: string) {
  await db.query(
    `insert into contacts (id, project_id, email) select md5('t' || n)::uuid, $1, 'trigger' || n || '@example.com' from generate_series(1, 250) n`,
    [projectId],
  );
  const rounds = 150;
  const writes: Record<string, (i: number, arm: string) => Promise<unknown>> = {
    'track batch (INSERT of 250 events)': () =>
      db.query(
        `insert into events (project_id, contact_id, name, source, data) select $1, md5('t' || n)::uuid, 'bench-track', 'API', '{"a":1}' from generate_series(1, 250) n`,
        [projectId],
      ),
    'single track (INSERT of 1 event)': () =>
      db.query(`insert into events (project_id, contact_id, name, source, data) values ($1, md5('t1')::uuid, 'bench-track', 'API', '{"a":1}')`, [projectId]),
    'accept a send (INSERT of 100 emails)': (i, arm) =>
      db.query(
        `insert into emails (id, project_id, contact_id, source, subject, from_address, to_address, status, message_id)
         select gen_random_uuid(), $1, md5('t' || n)::uuid, 'TRANSACTIONAL', 'trigger-cost', 'a@example.com', 'b@example.com', 'SENDING', $2
         from generate_series(1, 100) n`,
        [projectId, `${arm}-${i}`],
      ),
    'delivery batch (UPDATE of 100 emails to SENT)': (i, arm) =>
      db.query(`update emails set status = 'SENT', sent_at = now(), updated_at = now() where project_id = $1 and message_id = $2`, [projectId, `${arm}-${i}`]),
    'open (UPDATE of 1 email)': (i, arm) =>
      db.query(
        `update emails set opens = opens + 1, opened_at = coalesce(opened_at, now()), status = 'OPENED', updated_at = now()
          where id = (select id from emails where project_id = $1 and message_id = $2 limit 1)`,
        [projectId, `${arm}-${i}`],
      ),
  };
  await db.query(`create index if not exists bench_trigger_cost_index on emails (project_id, message_id)`);
  const samples: Record<string, { on: number[]; off: number[] }> = {};
  for (const name of Object.keys(writes)) samples[name] = { on: [], off: [] };
  for (let i = 0; i < rounds; i++) {
    const arms = i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
    for (const arm of arms) {
      await setTriggers(db, arm === 'on');
      for (const [name, write] of Object.entries(writes)) samples[name][arm].push(await oneTransaction(db, () => write(i, arm)));
    }
  }
  await setTriggers(db, true);
  await db.query(`drop index bench_trigger_cost_index`);
  await db.query(`delete from emails where project_id = $1 and subject = 'trigger-cost'`, [projectId]);
  await db.query(`delete from events where project_id = $1 and name = 'bench-track'`, [projectId]);
  await db.query(`delete from analytics_email_hourly where project_id = $1`, [projectId]);
  await db.query(`delete from analytics_event_hourly where project_id = $1`, [projectId]);
  await db.query(`delete from contacts where project_id = $1`, [projectId]);
  const median = (list: number[]) =>
    quantile(
      [...list].sort((a, b) => a - b),
      0.5,
    );
  const figures: Record<string, string> = {};
  for (const [name, { on, off }] of Object.entries(samples)) {
    figures[name] = `on ${median(on).toFixed(2)} ms, off ${median(off).toFixed(2)} ms (p50 of ${rounds}; +${(median(on) - median(off)).toFixed(2)} ms)`;
  }
  printFigures('What the rollup triggers cost each write transaction (triggers on vs off, interleaved)', figures);
}

async function seed(db: Client, projectId: string) {
  await timed('contacts', () =>
    db.query(
      `insert into contacts (id, project_id, email, subscribed) select md5('c' || n)::uuid, $1, 'user' || n || '@example.com', true from generate_series(1, ${CONTACTS}) n`,
      [projectId],
    ),
  );
  await db.query(
    `insert into campaigns (id, project_id, name, subject, body, from_address, audience_type, status, audience_fixed_at, sent_at, total_recipients, sent_count)
     select md5('k' || n)::uuid, $1, 'Campaign ' || n, 'News ' || n, '<p>x</p>', 'news@example.com', 'ALL', 'SENT',
            now() - make_interval(days => 365 - n * 7), now() - make_interval(days => 365 - n * 7) + interval '2 hours', ${CONTACTS / 2}, ${CONTACTS / 2}
     from generate_series(0, ${CAMPAIGNS - 1}) n`,
    [projectId],
  );
  const perCampaign = Math.floor((EMAILS * 0.25) / CAMPAIGNS); // 25,000: one email per contact per campaign
  for (let from = 1; from <= EMAILS; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, EMAILS);
    await timed(`emails ${to.toLocaleString('en')}`, () =>
      db.query(
        `insert into emails (id, project_id, contact_id, campaign_id, source, type, subject, from_address, to_address, status, message_id,
                             created_at, sent_at, delivered_at, opened_at, clicked_at, bounced_at)
         select gen_random_uuid(), $1, contact_id, campaign_id, source, 'MARKETING', 'Hello', 'news@example.com', 'x@example.com',
                case when bounced then 'BOUNCED' when clicked then 'CLICKED' when opened then 'OPENED' when delivered then 'DELIVERED' when sent then 'SENT' else 'FAILED' end,
                'm' || n, ts,
                case when sent then ts + interval '5 seconds' end,
                case when delivered then ts + interval '10 seconds' end,
                case when opened then ts + interval '1 hour' end,
                case when clicked then ts + interval '2 hours' end,
                case when bounced then ts + interval '10 seconds' end
         from (
           select n, r,
                  case when is_campaign then md5('c' || (1 + (n % ${perCampaign})))::uuid else md5('c' || (1 + ${h(1)} % ${CONTACTS}))::uuid end as contact_id,
                  case when is_campaign then md5('k' || (n / ${perCampaign}) % ${CAMPAIGNS})::uuid end as campaign_id,
                  case when is_campaign then 'CAMPAIGN' when r < 950 then 'TRANSACTIONAL' else 'WORKFLOW' end as source,
                  case when is_campaign
                       then now() - make_interval(days => 365 - ((n / ${perCampaign}) % ${CAMPAIGNS}) * 7) + (n % ${perCampaign}) * interval '200 milliseconds'
                       else now() - (${h(3)} % (365 * 86400)) * interval '1 second' end as ts,
                  ${h(4)} % 100 < 97 as sent,
                  ${h(4)} % 100 < 60 as delivered,
                  ${h(4)} % 100 < 25 as opened,
                  ${h(4)} % 100 < 5 as clicked,
                  ${h(4)} % 100 = 96 as bounced
           from (select n, ${h(2)} % 1000 as r, n <= ${perCampaign * CAMPAIGNS} as is_campaign from generate_series($2::int, $3::int) n) base
         ) s`,
        [projectId, from, to],
      ),
    );
  }
  for (let from = 1; from <= EVENTS; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, EVENTS);
    await timed(`events ${to.toLocaleString('en')}`, () =>
      db.query(
        `insert into events (project_id, contact_id, name, source, data, created_at)
         select $1, md5('c' || (1 + ${h(11)} % ${CONTACTS}))::uuid, ($2::text[])[1 + ${h(12)} % ${EVENT_NAMES.length}], 'API', '{"plan":"pro"}',
                now() - (${h(13)} % (365 * 86400)) * interval '1 second'
         from generate_series($3::int, $4::int) n`,
        [projectId, EVENT_NAMES, from, to],
      ),
    );
  }
}

async function main() {
  const stack = await startBenchStack({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const key = { key: project.secretKey };

    await triggerCost(db, project.id);
    if (process.env.BENCH_ANALYTICS_ONLY === 'triggers') return;

    console.log(`\nSeeding ${EMAILS.toLocaleString('en')} emails and ${EVENTS.toLocaleString('en')} events over a year…`);
    const tSeed = performance.now();
    await seed(db, project.id);
    const seedS = (performance.now() - tSeed) / 1000;
    await timed('vacuum analyze', () =>
      db.query('vacuum analyze contacts, campaigns, events, emails, analytics_email_hourly, analytics_event_hourly, analytics_campaign_counts'),
    );
    const { rows: sizes } = await db.query(
      `select (select count(*) from analytics_email_hourly where project_id = $1) as email_rows,
              (select count(*) from analytics_event_hourly where project_id = $1) as event_rows,
              (select sum(sent) from analytics_email_hourly where project_id = $1) as rollup_sent,
              (select count(*) from emails where project_id = $1 and sent_at is not null) as direct_sent`,
      [project.id],
    );
    printFigures('Seed', {
      'emails / events': `${EMAILS.toLocaleString('en')} / ${EVENTS.toLocaleString('en')}`,
      'insert incl. trigger rollups (s)': seedS.toFixed(1),
      'analytics_email_hourly rows': sizes[0].email_rows,
      'analytics_event_hourly rows': sizes[0].event_rows,
      'sent: rollup / direct count': `${sizes[0].rollup_sent} / ${sizes[0].direct_sent}`,
    });

    const yearAgo = new Date(Date.now() - 365 * 86400_000).toISOString();
    const endpoints: Array<[string, string, number]> = [
      ['timeseries, a year by day', `/analytics/timeseries?granularity=day&start=${yearAgo}`, 50],
      ['timeseries, a year by day, CAMPAIGN', `/analytics/timeseries?granularity=day&source=CAMPAIGN&start=${yearAgo}`, 50],
      ['activity/stats, a year', `/activity/stats?start=${yearAgo}`, 50],
      ['activity/stats, default 30 days', `/activity/stats`, 50],
      ['activity, first page (50)', `/activity`, 30],
      ['activity, first page, types=email.opened', `/activity?types=email.opened`, 30],
      ['activity, second page', '', 30],
      ['analytics/top-events, a year', `/analytics/top-events?start=${yearAgo}`, 50],
      ['analytics/top-campaigns, a year', `/analytics/top-campaigns?start=${yearAgo}`, 50],
    ];
    const first = await http.get('/activity', key);
    endpoints[6][1] = `/activity?cursor=${encodeURIComponent(first.body.cursor)}`;

    console.log(`\nOver HTTP: ${RUNS} runs after ${WARMUPS} warm-ups, client-side ms`);
    console.log(`  ${'endpoint'.padEnd(44)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'max'.padStart(7)}  target`);
    for (const [label, path, target] of endpoints) {
      const samples: number[] = [];
      for (let i = 0; i < WARMUPS + RUNS; i++) {
        const t = performance.now();
        const res = await http.get(path, key);
        const ms = performance.now() - t;
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${res.text}`);
        if (i >= WARMUPS) samples.push(ms);
      }
      samples.sort((a, b) => a - b);
      const p95 = quantile(samples, 0.95);
      console.log(
        `  ${label.padEnd(44)} ${quantile(samples, 0.5).toFixed(1).padStart(7)} ${p95.toFixed(1).padStart(7)} ${samples[samples.length - 1].toFixed(1).padStart(7)}  < ${target} ${p95 < target ? 'ok' : 'MISS'}`,
      );
    }
  } finally {
    await db.end();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
