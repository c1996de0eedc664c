/**
 * The dashboard's list pages: target (issue 37, contract 21 "Sizes") — the Contacts page shows its
 * first rows within 1 s over 1,000,000 contacts, the Emails page over 5,000,000 emails.
 *
 *   node --import tsx bench/dashboardLists.ts [contacts=1000000] [emails=5000000]
 *   (or: npm run bench:dashboard-lists -- 1000000 5000000)
 *
 * The API runs as a real child process from dist/ (bench/support/benchStack.ts), serving the
 * dashboard's build (dist/web/, built first when stale) at /app/. The bench signs up and creates a
 * project through the API, then seeds with server-side SQL (bench/support/contactSeed.ts, the
 * contacts of bench:search; bench/support/emailSeed.ts, the emails of bench:emails, to the first
 * 50,000 contacts), after checking the disk has room, and VACUUM ANALYZEs. Debian's Chromium
 * (playwright-core), holding the session cookie, then opens each page: 2 warm-ups and 10 timed
 * runs, each in a fresh tab of one browser context (the app's files cached, as for a returning
 * user), then the same in a fresh context each time (nothing cached: a first visit). A run is timed
 * in the page, from navigation start (performance.timeOrigin) to the moment the first row of the
 * page's table is in the DOM and visible (a MutationObserver installed before the app's scripts,
 * checkVisibility()). Beside it: when the page asked for the list, the list request's own Resource
 * Timing (start to response end) and the API's own time for it (the durationMs of its request log
 * line, found by X-Request-ID), so the split between browser and API shows. A missed target prints
 * the CPU each kind of process used over that page's runs. The database is dropped at the end.
 * Nothing fails on speed: the figures go to docs/benchmarks.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import { Client } from 'pg';
import type { Browser, BrowserContext } from 'playwright-core';
import { startBenchStack, printFigures, type BenchStack } from './support/benchStack';
import { seedContacts } from './support/contactSeed';
import { recipientsOf, seedCampaigns, seedEmails } from './support/emailSeed';
import { quantile } from './support/seedSql';
import { cpuByKind, cpuSnapshot } from './support/processCpu';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { launchChromium } from '../test/support/browser';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script, without types to import
const { ensureWebBuilt } = require('../scripts/build-web.cjs') as { ensureWebBuilt: () => void };

const CONTACTS = Number(process.argv[2] ?? 1_000_000);
const EMAILS = Number(process.argv[3] ?? 5_000_000);
/** The emails go to this many contacts (bench:emails' 50,000), fewer when there are fewer. */
const RECIPIENTS = 50_000;
const CAMPAIGNS = 20;
const WARMUPS = 2;
const RUNS = 10;
const TARGET_MS = 1000;
/**
 * Disk a seeded row takes, table, indexes and WAL on the way, with room to spare: bench:emails
 * measured 1.3 GB of table and 2.5 GB of indexes for 5,000,000 emails (about 760 bytes each).
 */
const BYTES_PER_CONTACT = 1500;
const BYTES_PER_EMAIL = 1500;
const DISK_MARGIN_BYTES = 2 * 1024 ** 3;

/** Set by the script below: performance.now() when the first row of a table was in the DOM and visible. */
const FIRST_ROW_OBSERVER = `(() => {
  const observer = new MutationObserver(() => {
    const row = document.querySelector('table tbody tr');
    if (row && row.checkVisibility()) {
      window.__benchFirstRowAt = performance.now();
      window.__benchFirstRowText = row.textContent;
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true });
})()`;

interface Run {
  firstRowMs: number;
  /** When the page asked for the list, from navigation start. */
  listStartMs: number;
  /** The list request as the browser saw it: start to the response's last byte. */
  listMs: number;
  /** The API's own time for it (its request log line). */
  apiMs: number;
  firstRowText: string;
  /** The app's module scripts have run (the navigation's DOMContentLoaded end). */
  scriptsRanMs: number;
  /** The page's first fetch (the session check), from navigation start. */
  firstFetchMs: number;
  /** Every request the page made through fetch, in order: path, start, duration. */
  fetches: Array<{ path: string; start: number; duration: number }>;
}

interface PageSpec {
  name: string;
  path: string;
  /** The list request's path. */
  apiPath: string;
  over: string;
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

/** Refuses to seed when the disk under PostgreSQL's data directory has too little room. */
async function checkDiskSpace(db: Client): Promise<void> {
  let dataDirectory = os.tmpdir(); // an embedded server keeps its data there
  try {
    const dir = (await db.query('show data_directory')).rows[0].data_directory as string;
    if (fs.existsSync(dir)) dataDirectory = dir;
  } catch {
    // not a superuser: the server's files are elsewhere; the temporary directory's disk is a guess
  }
  const stats = fs.statfsSync(dataDirectory);
  const free = stats.bavail * stats.bsize;
  const needed = CONTACTS * BYTES_PER_CONTACT + EMAILS * BYTES_PER_EMAIL + DISK_MARGIN_BYTES;
  console.log(`Disk under ${dataDirectory}: ${gib(free)} free, the seed needs about ${gib(needed)}`);
  if (free < needed) throw new Error(`not enough disk space to seed: ${gib(free)} free, about ${gib(needed)} needed; pass smaller sizes`);
}

async function seed(db: Client, projectId: string) {
  const t = performance.now();
  console.log(`Seeding ${CONTACTS.toLocaleString('en')} contacts and ${EMAILS.toLocaleString('en')} emails…`);
  await seedContacts(db, projectId, CONTACTS);
  const campaignIds = await seedCampaigns(db, projectId, CAMPAIGNS);
  await seedEmails(db, projectId, EMAILS, { recipients: await recipientsOf(db, projectId, RECIPIENTS), campaignIds });
  const seedS = (performance.now() - t) / 1000;
  const tVacuum = performance.now();
  await db.query('vacuum analyze contacts');
  await db.query('vacuum analyze emails');
  const [sizes] = (
    await db.query(`select pg_size_pretty(pg_table_size('contacts')) as ct, pg_size_pretty(pg_indexes_size('contacts')) as ci,
                           pg_size_pretty(pg_table_size('emails')) as et, pg_size_pretty(pg_indexes_size('emails')) as ei,
                           pg_size_pretty(pg_database_size(current_database())) as db`)
  ).rows;
  printFigures('Seed', {
    contacts: CONTACTS.toLocaleString('en'),
    emails: EMAILS.toLocaleString('en'),
    'insert (s)': seedS.toFixed(1),
    'vacuum analyze (s)': ((performance.now() - tVacuum) / 1000).toFixed(1),
    'contacts: table / indexes': `${sizes.ct} / ${sizes.ci}`,
    'emails: table / indexes': `${sizes.et} / ${sizes.ei}`,
    database: sizes.db,
  });
}

async function timeOneLoad(stack: BenchStack, context: BrowserContext, url: string, apiPath: string): Promise<Run> {
  const page = await context.newPage();
  try {
    let requestId: string | undefined;
    page.on('response', (response) => {
      const u = new URL(response.url());
      if (requestId === undefined && u.pathname === apiPath && response.request().method() === 'GET') requestId = response.headers()['x-request-id'];
    });
    await page.goto(url, { waitUntil: 'commit' });
    // A row, or the page's error notice (an API error: no row will come). A function, not a string:
    // the page's CSP forbids eval, which a string predicate goes through.
    await page.waitForFunction(
      () => {
        const inPage = globalThis as unknown as { __benchFirstRowAt?: number; document: { querySelector(selector: string): unknown } };
        return inPage.__benchFirstRowAt !== undefined || inPage.document.querySelector('[role="alert"]') !== null;
      },
      undefined,
      { timeout: 120_000, polling: 50 },
    );
    // A string, not a function: the benches' tsconfig has no DOM types.
    const measured = await page.evaluate<{
      firstRowAt?: number;
      firstRowText?: string;
      alert?: string;
      fetches: Array<{ path: string; start: number; duration: number }>;
      list?: { start: number; end: number };
      domContentLoaded: number;
    }>(`(() => {
      const fetches = performance.getEntriesByType('resource').filter((e) => e.initiatorType === 'fetch');
      const list = fetches.find((e) => new URL(e.name).pathname === ${JSON.stringify(apiPath)});
      return {
        firstRowAt: window.__benchFirstRowAt,
        firstRowText: window.__benchFirstRowText,
        alert: document.querySelector('[role="alert"]')?.textContent ?? undefined,
        fetches: fetches.map((e) => { const u = new URL(e.name); return { path: u.pathname + u.search, start: e.startTime, duration: e.duration }; }),
        list: list ? { start: list.startTime, end: list.responseEnd } : undefined,
        domContentLoaded: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
      };
    })()`);
    if (measured.firstRowAt === undefined) throw new Error(`${url} showed an error instead of rows: ${measured.alert}`);
    if (!measured.list) throw new Error(`${url}: no ${apiPath} request in the page's Resource Timing`);
    // The API writes its request line once the response is decided; it is in the log by now, or very soon.
    let apiMs = NaN;
    for (let i = 0; i < 50 && Number.isNaN(apiMs); i++) {
      const line = stack.apiLog.find((l) => l.msg === 'request' && l.requestId === requestId);
      if (line) apiMs = Number(line.durationMs);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return {
      firstRowMs: measured.firstRowAt,
      listStartMs: measured.list.start,
      listMs: measured.list.end - measured.list.start,
      apiMs,
      firstRowText: (measured.firstRowText ?? '').replace(/\s+/g, ' ').trim(),
      scriptsRanMs: measured.domContentLoaded,
      firstFetchMs: measured.fetches[0]?.start ?? NaN,
      fetches: measured.fetches,
    };
  } finally {
    await page.close();
  }
}

function stats(values: number[]) {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return { p50: NaN, p95: NaN, max: NaN };
  return { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), max: sorted[sorted.length - 1] };
}

async function timePage(
  stack: BenchStack,
  browser: Browser,
  cookie: { name: string; value: string },
  spec: PageSpec,
  fresh: 'tab' | 'context',
): Promise<{ met: boolean; p95: number }> {
  const newContext = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ ...cookie, url: stack.apiUrl }]);
    await context.addInitScript(FIRST_ROW_OBSERVER);
    return context;
  };
  const url = `${stack.apiUrl}${spec.path}`;
  const runs: Run[] = [];
  const shared = fresh === 'tab' ? await newContext() : undefined;
  let cpuFrom = cpuSnapshot();
  try {
    for (let i = 0; i < WARMUPS + RUNS; i++) {
      if (i === WARMUPS) cpuFrom = cpuSnapshot();
      const context = shared ?? (await newContext());
      try {
        const run = await timeOneLoad(stack, context, url, spec.apiPath);
        if (i >= WARMUPS) runs.push(run);
      } finally {
        if (!shared) await context.close();
      }
    }
  } finally {
    await shared?.close();
  }
  const cpu = cpuByKind(cpuFrom, cpuSnapshot());

  const label = fresh === 'tab' ? 'a fresh tab, the app’s files cached' : 'a fresh browser context, nothing cached';
  console.log(`\n${spec.name} page (${spec.path.replace(/projects\/[^/]+/, 'projects/:id')}) over ${spec.over}, ${label}:`);
  console.log(`  ${RUNS} runs after ${WARMUPS} warm-ups; ms from navigation start; target: first row ≤ ${TARGET_MS} ms`);
  console.log(`  ${''.padEnd(44)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'max'.padStart(7)}`);
  const line = (name: string, values: number[]) => {
    const s = stats(values);
    console.log(`  ${name.padEnd(44)} ${s.p50.toFixed(1).padStart(7)} ${s.p95.toFixed(1).padStart(7)} ${s.max.toFixed(1).padStart(7)}`);
  };
  const rows: Array<[string, (r: Run) => number]> = [
    ['first row visible', (r) => r.firstRowMs],
    ['app scripts ran (DOMContentLoaded)', (r) => r.scriptsRanMs],
    ['first API call (the session) at', (r) => r.firstFetchMs],
    [`${spec.apiPath} requested at`, (r) => r.listStartMs],
    [`${spec.apiPath} request (Resource Timing)`, (r) => r.listMs],
    [`${spec.apiPath}, the API's own time (its log)`, (r) => r.apiMs],
    ['from its answer to the first row', (r) => r.firstRowMs - r.listStartMs - r.listMs],
  ];
  for (const [name, value] of rows) line(name, runs.map(value));
  const firstRow = stats(runs.map((r) => r.firstRowMs));
  const met = firstRow.p95 <= TARGET_MS;
  console.log(`  target ${met ? 'met' : 'MISSED'} (p95 ${firstRow.p95.toFixed(0)} ms); the first row: "${runs[runs.length - 1].firstRowText.slice(0, 90)}"`);
  const last = runs[runs.length - 1];
  console.log(
    `  the last run's requests (start ms, duration ms): ${last.fetches.map((f) => `${f.path.split('?')[0]} ${f.start.toFixed(0)}+${f.duration.toFixed(0)}`).join(', ')}`,
  );
  if (!met) {
    const total = cpu.busy + cpu.idle;
    console.log(`  CPU over the ${RUNS} runs (s), by process: ${cpu.byKind.map(([kind, s]) => `${kind} ${s.toFixed(2)}`).join(', ')}`);
    console.log(`  the busiest of "other": ${cpu.topOther.map(([command, s]) => `${command} ${s.toFixed(2)}`).join(', ')}`);
    console.log(`  machine: ${cpu.busy.toFixed(2)} s busy, ${Math.round((100 * cpu.idle) / total)} % idle; load average ${os.loadavg()[0].toFixed(2)}`);
  }
  return { met, p95: firstRow.p95 };
}

async function main() {
  if (!(CONTACTS >= 1 && EMAILS >= 1)) throw new Error('usage: bench/dashboardLists.ts [contacts ≥ 1] [emails ≥ 1]');
  console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${gib(os.totalmem())} memory; load average ${os.loadavg()[0].toFixed(2)}`);
  ensureWebBuilt();
  const stack = await startBenchStack({ env: { RATE_LIMIT_PER_MINUTE: '100000000', SESSION_RATE_LIMIT_PER_MINUTE: '100000000' } });
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= stack.stop());
  // Ctrl-C still drops the bench database.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop().finally(() => process.exit(130)));
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  let browser: Browser | undefined;
  try {
    await checkDiskSpace(db);
    const http = new HttpClient(stack.apiUrl);
    const app = await http.get('/app/');
    if (app.status !== 200 || !/\/app\/assets\//.test(app.text))
      throw new Error(`the API does not serve the dashboard at /app/: ${app.status} ${app.text.slice(0, 200)}`);
    const { account, project } = await accountWithProject(http);
    const [name, value] = account.cookie.split(/=(.*)/s);

    await seed(db, project.id);

    browser = await launchChromium();
    console.log(
      `\nChromium ${browser.version()}; load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const pages: PageSpec[] = [
      { name: 'Contacts', path: `/app/projects/${project.id}/contacts`, apiPath: '/contacts', over: `${CONTACTS.toLocaleString('en')} contacts` },
      { name: 'Emails', path: `/app/projects/${project.id}/emails`, apiPath: '/emails', over: `${EMAILS.toLocaleString('en')} emails` },
    ];
    const summary: Record<string, string> = {};
    for (const spec of pages) {
      for (const fresh of ['tab', 'context'] as const) {
        const r = await timePage(stack, browser, { name, value }, spec, fresh);
        summary[`${spec.name}, ${fresh === 'tab' ? 'fresh tab' : 'fresh context'}`] = `p95 ${r.p95.toFixed(0)} ms, ${r.met ? 'met' : 'MISSED'}`;
      }
    }
    printFigures(`First row within ${TARGET_MS} ms (p95)`, summary);
  } finally {
    await browser?.close();
    await db.end();
    await stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
