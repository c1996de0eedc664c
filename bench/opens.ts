/**
 * Open and click tracking at campaign scale: target 2,000 opens/s of one campaign without lock
 * waits, with exact counts. The API runs as a real child process; the load generator and the lock
 * sampler run in this process, on the same machine as PostgreSQL.
 *
 *   node --import tsx bench/opens.ts [emails=60000]        (or: npm run bench:opens)
 *
 * One campaign's emails are inserted with SQL as SENT (created now, so they share one hourly
 * rollup bucket and one campaign counter, the hot rows this bench is about), and their open
 * pixel and click URLs are made by mail/links/signedLinks.ts, as rendered mail has them. Phases:
 * opens at a steady 2,000 requests/s for 20 s (each a first open of a new email), opens
 * unthrottled for 10 s (first opens, then repeats), clicks at 2,000/s for 10 s and unthrottled for
 * 10 s (first clicks; most emails not yet opened, so the click counts as the open too).
 *
 * During each phase a second connection samples pg_stat_activity every 50 ms for backends of the
 * bench database waiting on a lock (wait_event_type = 'Lock': row, transaction id or tuple locks,
 * which is what writers queueing on one counter row wait on). At the end the campaign's stats
 * (GET /campaigns/:id/stats, counted from the emails) and the analytics rollup
 * (GET /analytics/campaign-stats) must equal the emails' own columns and the email.opened /
 * email.clicked events, and lie between the distinct emails answered and those asked for.
 */
import autocannon from 'autocannon';
import { steadyLoad, type LoadResult } from './support/steadyLoad';
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { emailLinks } from '../mail/links/signedLinks';

const CONNECTIONS = 100;
const RATE = 2000;

interface LockSamples {
  samples: number;
  withWaits: number;
  maxWaiting: number;
  /** Waiting backends seen, by lock kind and the statement that waits. */
  waiters: Map<string, number>;
}

/** Samples lock waits of the bench database every 50 ms until the returned function is called. */
function sampleLockWaits(db: Client) {
  const result: LockSamples = { samples: 0, withWaits: 0, maxWaiting: 0, waiters: new Map() };
  let running = true;
  const done = (async () => {
    while (running) {
      const { rows } = await db.query(
        `select wait_event, regexp_replace(left(query, 70), '\\s+', ' ', 'g') as statement, count(*)::int as waiting
           from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' group by 1, 2`,
      );
      const waiting = rows.reduce((n, r) => n + r.waiting, 0);
      result.samples++;
      if (waiting > 0) result.withWaits++;
      result.maxWaiting = Math.max(result.maxWaiting, waiting);
      for (const r of rows) result.waiters.set(`${r.wait_event}: ${r.statement}`, (result.waiters.get(`${r.wait_event}: ${r.statement}`) ?? 0) + r.waiting);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return async () => {
    running = false;
    await done;
    return result;
  };
}

/** Waits until no other backend of the bench database is running a statement: the last requests are committed. */
async function quiesce(db: Client) {
  for (;;) {
    const { rows } = await db.query(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid()`,
    );
    if (rows[0].n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function main() {
  const emails = Number(process.argv[2] ?? 60_000);
  const stack = await startBenchStack({ env: { RATE_LIMIT_PER_MINUTE: '100000000' } });
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    await db.query(
      `insert into contacts (id, project_id, email, subscribed) select md5('c' || n)::uuid, $1, 'reader' || n || '@bench.example', true
       from generate_series(0, $2 - 1) n`,
      [project.id, emails],
    );
    const [{ id: campaignId }] = (
      await db.query(
        `insert into campaigns (project_id, name, subject, body, from_address, audience_type, status, audience_fixed_at, sent_at, total_recipients, sent_count)
         values ($1, 'Opens bench', 'News', '<p>x</p>', 'news@example.com', 'ALL', 'SENT', now(), now(), $2, $2) returning id`,
        [project.id, emails],
      )
    ).rows;
    const { rows: emailRows } = await db.query(
      `insert into emails (id, project_id, contact_id, campaign_id, source, type, subject, from_address, to_address, status, message_id, sent_at)
       select gen_random_uuid(), $1, md5('c' || n)::uuid, $2, 'CAMPAIGN', 'MARKETING', 'News', 'news@example.com', 'reader' || n || '@bench.example',
              'SENT', '<bench-' || n || '@example.com>', now()
       from generate_series(0, $3 - 1) n
       returning id, contact_id`,
      [project.id, campaignId, emails],
    );
    await db.query('vacuum analyze emails, contacts, events');
    const links = emailRows.map((r) => emailLinks(stack.apiUrl, stack.env.SECRET, { emailId: r.id, contactId: r.contact_id }));
    const local = (url: string) => url.slice(stack.apiUrl.length);
    const openPaths = links.map((l) => local(l.openPixelUrl));
    const clickPaths = links.map((l) => local(l.clickUrl('https://example.com/read')));

    const asked = { opened: new Set<number>(), clicked: new Set<number>() };
    const answered = { opened: new Set<number>(), clicked: new Set<number>() };
    let nextOpen = 0;
    let nextClick = 0;
    /** The next request of a kind: its path, noted as asked, and what its answer notes. */
    const nextRequest = (kind: 'open' | 'click') => {
      const index = kind === 'open' ? nextOpen++ % emails : (nextClick++ * 7919) % emails;
      asked.opened.add(index);
      if (kind === 'click') asked.clicked.add(index);
      return {
        path: kind === 'open' ? openPaths[index] : clickPaths[index],
        onAnswer: (status: number) => {
          if (status !== 200 && status !== 302) return;
          answered.opened.add(index);
          if (kind === 'click') answered.clicked.add(index);
        },
      };
    };
    // A steady rate open-loop (bench/support/steadyLoad.ts says why not autocannon's overallRate);
    // unthrottled, autocannon's connections as fast as they are answered.
    const run = (kind: 'open' | 'click', seconds: number, rate?: number): Promise<LoadResult> =>
      rate
        ? steadyLoad({ url: stack.apiUrl, rate, duration: seconds, connections: CONNECTIONS, method: 'GET', request: () => nextRequest(kind) })
        : autocannon({
            url: stack.apiUrl,
            connections: CONNECTIONS,
            duration: seconds,
            requests: [
              {
                setupRequest: (req: Record<string, unknown>, context: Record<string, unknown>) => {
                  const next = nextRequest(kind);
                  context.onAnswer = next.onAnswer;
                  return { ...req, method: 'GET', path: next.path };
                },
                onResponse: (status: number, _body: string, context: Record<string, unknown>) => (context.onAnswer as (status: number) => void)(status),
              },
            ],
          });

    const measured = async (title: string, kind: 'open' | 'click', seconds: number, overallRate?: number) => {
      const stop = sampleLockWaits(db);
      const result = await run(kind, seconds, overallRate);
      const locks = await stop();
      printFigures(title, {
        'requests/s (mean)': Math.round(result.requests.average),
        'latency p50 (ms)': result.latency.p50,
        'latency p90 (ms)': result.latency.p90,
        'latency p99 (ms)': result.latency.p99,
        'latency max (ms)': result.latency.max,
        'non-2xx responses (a click is a 302)': result.non2xx,
        errors: result.errors + result.timeouts,
        'requests total': result.requests.total,
        'lock samples (every 50 ms)': locks.samples,
        'samples with a lock wait': locks.withWaits,
        'max backends waiting on a lock': locks.maxWaiting,
      });
      const top = [...locks.waiters].sort((a, b) => b[1] - a[1]).slice(0, 3);
      for (const [what, n] of top) console.log(`    waiting (${n} backend-samples) on ${what}`);
    };

    await measured(`GET open pixel at a steady ${RATE} requests/s (open loop, up to ${CONNECTIONS} connections), 20 s`, 'open', 20, RATE);
    await measured(`GET open pixel unthrottled, ${CONNECTIONS} connections, 10 s`, 'open', 10);
    await measured(`GET click redirect at a steady ${RATE} requests/s (open loop, up to ${CONNECTIONS} connections), 10 s`, 'click', 10, RATE);
    await measured(`GET click redirect unthrottled, ${CONNECTIONS} connections, 10 s`, 'click', 10);

    // Requests autocannon abandoned at the end of a phase are still recorded by the API: wait for
    // them, then the counts must agree with each other and lie between what was answered and what was asked.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await quiesce(db);
    const stats = await http.request('GET', `/campaigns/${campaignId}/stats`, { key: project.secretKey });
    const rollup = await http.request('GET', '/analytics/campaign-stats', { key: project.secretKey });
    const { rows: direct } = await db.query(
      `select count(*) filter (where opened_at is not null)::int as opened, count(*) filter (where clicked_at is not null)::int as clicked
         from emails where campaign_id = $1`,
      [campaignId],
    );
    const { rows: events } = await db.query(
      `select count(*) filter (where name = 'email.opened')::int as opened, count(*) filter (where name = 'email.clicked')::int as clicked
         from events where project_id = $1`,
      [project.id],
    );
    printFigures('Counts after the load', {
      'emails answered / asked to open': `${answered.opened.size} / ${asked.opened.size}`,
      'emails answered / asked to click': `${answered.clicked.size} / ${asked.clicked.size}`,
      'opened: emails, events, stats, rollup': `${direct[0].opened}, ${events[0].opened}, ${stats.body.data.openedCount}, ${rollup.body.opened}`,
      'clicked: emails, events, stats, rollup': `${direct[0].clicked}, ${events[0].clicked}, ${stats.body.data.clickedCount}, ${rollup.body.clicked}`,
    });
    const agree = (n: number[], answeredCount: number, askedCount: number) => n.every((x) => x === n[0]) && answeredCount <= n[0] && n[0] <= askedCount;
    const exact =
      agree([direct[0].opened, events[0].opened, stats.body.data.openedCount, rollup.body.opened], answered.opened.size, asked.opened.size) &&
      agree([direct[0].clicked, events[0].clicked, stats.body.data.clickedCount, rollup.body.clicked], answered.clicked.size, asked.clicked.size);
    console.log(exact ? '\n  counts exact' : '\n  COUNTS DIFFER');
    if (!exact) process.exitCode = 1;
  } finally {
    await db.end();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
