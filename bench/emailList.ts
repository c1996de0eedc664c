/**
 * Email records: target (issue 26) — GET /emails first page, filtered by status or contact, over
 * 5,000,000 emails: p95 under 30 ms. The API is a real child process on the same machine.
 *
 *   node --import tsx bench/emailList.ts [emails=5000000]      (or: npm run bench:emails)
 *
 * Creates a project through the API, then inserts directly with SQL 50,000 contacts, 20 campaigns
 * and the emails: each to one contact, a year of created_at, statuses in the shares a sending
 * project sees (mostly SENT/DELIVERED/OPENED, 1 % BOUNCED, 0.1 % FAILED, 0.01 % COMPLAINED, none
 * QUEUED), 30 % of them campaign mail. Short bodies: the list never reads them. VACUUM ANALYZE,
 * then times over HTTP (secret key) the first page of each filter: 3 warm-ups, then 20 runs each,
 * and prints the plan of the slowest.
 */
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';

const EMAILS = Number(process.argv[2] ?? 5_000_000);
const CONTACTS = 50_000;
const CAMPAIGNS = 20;
const CHUNK = 250_000;
const WARMUPS = 3;
const RUNS = 20;
const TARGET_MS = 30;

/** Deterministic pseudo-random column k of row n: a non-negative bigint. */
const h = (k: number) => `(hashint4extended(n, ${k}) & 9223372036854775807)`;

/** The status of email n by its share (per 10,000). */
const STATUS_SQL = `case
  when ${h(1)} % 10000 < 1 then 'COMPLAINED'
  when ${h(1)} % 10000 < 11 then 'FAILED'
  when ${h(1)} % 10000 < 111 then 'BOUNCED'
  when ${h(1)} % 10000 < 211 then 'SUPPRESSED'
  when ${h(1)} % 10000 < 511 then 'CLICKED'
  when ${h(1)} % 10000 < 1511 then 'OPENED'
  when ${h(1)} % 10000 < 5011 then 'DELIVERED'
  else 'SENT' end`;

async function seed(db: Client, projectId: string) {
  await db.query(
    `insert into contacts (project_id, email, subscribed, data)
     select $1, 'reader' || n || '@example.org', true, '{}'::jsonb from generate_series(1, $2::int) n`,
    [projectId, CONTACTS],
  );
  await db.query(
    `insert into campaigns (project_id, name, subject, body, from_address, type, audience_type, status)
     select $1, 'campaign ' || n, 'Issue ' || n, '<p>hi</p>', 'news@example.org', 'MARKETING', 'ALL', 'SENT' from generate_series(1, $2::int) n`,
    [projectId, CAMPAIGNS],
  );
  const contacts = (await db.query(`select array_agg(id order by email) as ids from contacts where project_id = $1`, [projectId])).rows[0].ids;
  const campaigns = (await db.query(`select array_agg(id order by name) as ids from campaigns where project_id = $1`, [projectId])).rows[0].ids;
  for (let from = 1; from <= EMAILS; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, EMAILS);
    const t = performance.now();
    // A campaign email's (campaign, contact) is unique: campaign c takes contacts by n's place in its block.
    await db.query(
      `insert into emails (id, project_id, contact_id, campaign_id, source, type, subject, from_address, to_address, html, text,
                           status, message_id, attempts, sent_at, delivered_at, opened_at, clicked_at, bounced_at, complained_at, created_at, updated_at)
       select gen_random_uuid(), $1, ($2::uuid[])[1 + cx], camp, case when camp is null then 'TRANSACTIONAL' else 'CAMPAIGN' end,
              case when camp is null then 'TRANSACTIONAL' else 'MARKETING' end, 'Subject ' || n, 'news@example.org',
              'reader' || (1 + cx) || '@example.org', '<p>short</p>', 'short', st, 'bench-' || n || '@example.org', 1,
              case when st not in ('SUPPRESSED', 'FAILED') then ts end,
              case when st in ('DELIVERED', 'OPENED', 'CLICKED') then ts end,
              case when st in ('OPENED', 'CLICKED') then ts end,
              case when st = 'CLICKED' then ts end,
              case when st = 'BOUNCED' then ts end,
              case when st = 'COMPLAINED' then ts end,
              ts, ts
       from (
         select n, ${STATUS_SQL} as st,
                now() - (${h(2)} % (365 * 86400)) * interval '1 second' as ts,
                case when ${h(3)} % 10 < 3 and n <= $4::int * $5::int then ($3::uuid[])[1 + (n - 1) / $5::int] end as camp,
                case when ${h(3)} % 10 < 3 and n <= $4::int * $5::int then (n - 1) % $5::int else ${h(4)} % $5::int end as cx
         from generate_series($6::int, $7::int) n
       ) s`,
      [projectId, contacts, campaigns, CAMPAIGNS, CONTACTS, from, to],
    );
    process.stdout.write(`  inserted ${to.toLocaleString('en')} (${((performance.now() - t) / 1000).toFixed(1)} s for this chunk)\n`);
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
    const key = project.secretKey;

    console.log(`Seeding ${EMAILS.toLocaleString('en')} emails…`);
    const tSeed = performance.now();
    await seed(db, project.id);
    const seedS = (performance.now() - tSeed) / 1000;
    await db.query('vacuum analyze emails');
    await db.query('vacuum analyze contacts');
    const [sizes] = (await db.query(`select pg_size_pretty(pg_table_size('emails')) as t, pg_size_pretty(pg_indexes_size('emails')) as i`)).rows;
    printFigures('Seed', { emails: EMAILS.toLocaleString('en'), 'insert (s)': seedS.toFixed(1), 'table / indexes': `${sizes.t} / ${sizes.i}` });

    const busyContact = (await db.query(`select contact_id from emails where project_id = $1 group by contact_id order by count(*) desc limit 1`, [project.id]))
      .rows[0].contact_id;
    const campaign = (await db.query(`select id from campaigns where project_id = $1 order by name limit 1 offset 7`, [project.id])).rows[0].id;
    const to = (await db.query(`select email from contacts where id = $1`, [busyContact])).rows[0].email;

    const filters: Record<string, string> = {
      'no filter': '/emails',
      'status=SENT (dense)': '/emails?status=SENT',
      'status=BOUNCED (1 %)': '/emails?status=BOUNCED',
      'status=FAILED (0.1 %)': '/emails?status=FAILED',
      'status=COMPLAINED (0.01 %)': '/emails?status=COMPLAINED',
      'status=QUEUED (none)': '/emails?status=QUEUED',
      'contactId (busiest contact)': `/emails?contactId=${busyContact}`,
      'contactId + status=OPENED': `/emails?contactId=${busyContact}&status=OPENED`,
      campaignId: `/emails?campaignId=${campaign}`,
      'to (exact address)': `/emails?to=${encodeURIComponent(to.toUpperCase())}`,
      'source=CAMPAIGN': '/emails?source=CAMPAIGN',
    };
    const rows: Array<{ name: string; p50: number; p95: number; max: number; returned: number }> = [];
    for (const [name, path] of Object.entries(filters)) {
      const samples: number[] = [];
      let returned = 0;
      for (let i = 0; i < WARMUPS + RUNS; i++) {
        const t = performance.now();
        const res = await http.get(path, { key });
        const ms = performance.now() - t;
        if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.text}`);
        if (i >= WARMUPS) samples.push(ms);
        returned = res.body.data.length;
      }
      samples.sort((a, b) => a - b);
      rows.push({ name, p50: quantile(samples, 0.5), p95: quantile(samples, 0.95), max: samples[samples.length - 1], returned });
    }
    console.log(`\nGET /emails, first page (limit 20), ${RUNS} runs after ${WARMUPS} warm-ups; target p95 < ${TARGET_MS} ms\n`);
    console.log('  filter                              p50 ms   p95 ms   max ms  rows  target');
    for (const r of rows)
      console.log(
        `  ${r.name.padEnd(34)} ${r.p50.toFixed(1).padStart(7)} ${r.p95.toFixed(1).padStart(8)} ${r.max.toFixed(1).padStart(8)} ${String(r.returned).padStart(5)}  ${r.p95 < TARGET_MS ? 'met' : 'MISSED'}`,
      );
  } finally {
    await db.end();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
