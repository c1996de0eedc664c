/**
 * Email records: target (issue 26) — GET /emails first page, filtered by status or contact, over
 * 5,000,000 emails: p95 under 30 ms. The API is a real child process on the same machine.
 *
 *   node --import tsx bench/emailList.ts [emails=5000000]      (or: npm run bench:emails)
 *
 * Creates a project through the API, then inserts directly with SQL (bench/support/emailSeed.ts)
 * 50,000 contacts, 20 campaigns and the emails: each to one contact, a year of created_at, statuses in the shares a sending
 * project sees (mostly SENT/DELIVERED/OPENED, 1 % BOUNCED, 0.1 % FAILED, 0.01 % COMPLAINED, none
 * QUEUED), 30 % of them campaign mail. Short bodies: the list never reads them. VACUUM ANALYZE,
 * then times over HTTP (secret key) the first page of each filter: 3 warm-ups, then 20 runs each,
 * and prints the plan of the slowest.
 */
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { recipientsOf, seedCampaigns, seedEmails, seedReaders } from './support/emailSeed';
import { quantile } from './support/seedSql';

const EMAILS = Number(process.argv[2] ?? 5_000_000);
const CONTACTS = 50_000;
const CAMPAIGNS = 20;
const CHUNK = 250_000;
const WARMUPS = 3;
const RUNS = 20;
const TARGET_MS = 30;

async function seed(db: Client, projectId: string) {
  await seedReaders(db, projectId, CONTACTS);
  const campaignIds = await seedCampaigns(db, projectId, CAMPAIGNS);
  await seedEmails(db, projectId, EMAILS, { recipients: await recipientsOf(db, projectId, CONTACTS), campaignIds, chunk: CHUNK });
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
