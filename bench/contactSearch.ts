/**
 * Contact search: target — GET /contacts first page with search over 1,000,000 contacts in under
 * 100 ms, against the local PostgreSQL, the API as a real child process on the same machine.
 *
 *   node --import tsx bench/contactSearch.ts        (or: npm run bench:search)
 *
 * Creates a project through the API, inserts 1,000,000 contacts for it directly with SQL
 * (bench/support/contactSeed.ts: `firstname.lastname<n>@<one of 50 domains>`, gmail.com for 10% of
 * them, a small data object, created_at spread over the last year), VACUUM ANALYZEs, then times over HTTP (secret key)
 * GET /contacts?search=… for a rare, a medium, a common, a missing and a 2-character term, plus
 * the unsearched first page and its second page through the cursor: 3 warm-ups, then 20 runs
 * each. A first page runs two queries (the keyset page and a count for `total`, exact up to
 * 10,000 matches for a search, then reported as capped); the EXPLAIN
 * (ANALYZE, BUFFERS) plans printed at the end show which index answers each.
 */
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { likeContains, SEARCH_TOTAL_CAP } from '../db/contacts/contactQueries';
import { contactEmailOf, seedContacts } from './support/contactSeed';
import { quantile } from './support/seedSql';

const CONTACTS = 1_000_000;
const CHUNK = 100_000;
const WARMUPS = 3;
const RUNS = 20;
const TARGET_MS = 100;
const PAGE_LIMIT = 20; // the API's default; the page query asks for one more to know hasMore

async function main() {
  const stack = await startBenchStack({ env: { RATE_LIMIT_PER_MINUTE: '100000000' } });
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const key = project.secretKey;

    console.log(`Seeding ${CONTACTS.toLocaleString('en')} contacts…`);
    const tSeed = performance.now();
    await seedContacts(db, project.id, CONTACTS, { chunk: CHUNK });
    const seedS = (performance.now() - tSeed) / 1000;
    const tVacuum = performance.now();
    await db.query('vacuum analyze contacts');
    const vacuumS = (performance.now() - tVacuum) / 1000;
    const [sizes] = (
      await db.query(
        `select pg_size_pretty(pg_table_size('contacts')) as "table", pg_size_pretty(pg_relation_size('contacts_project_email_trgm_index')) as trgm,
                pg_size_pretty(pg_relation_size('contacts_project_created_index')) as created, pg_size_pretty(pg_relation_size('contacts_project_email_unique')) as "unique"`,
      )
    ).rows;
    printFigures('Seed', {
      contacts: CONTACTS.toLocaleString('en'),
      'insert (s)': seedS.toFixed(1),
      'vacuum analyze (s)': vacuumS.toFixed(1),
      'table size': sizes.table,
      'index sizes (trgm / created / unique)': `${sizes.trgm} / ${sizes.created} / ${sizes.unique}`,
    });

    // The rare term: one contact's whole local part, with the @ so that n=12345 does not also
    // match 123450…123459.
    const rareEmail = await contactEmailOf(db, 123457);
    const rare = rareEmail.slice(0, rareEmail.indexOf('@') + 1);
    const terms: Record<string, string> = {
      rare,
      medium: 'garcia', // one last name of 100
      common: '@gmail.com', // 10% of contacts
      none: 'zzqxj',
      'short (2 chars)': 'jo',
    };

    const time = async (path: string) => {
      let last: any;
      const samples: number[] = [];
      for (let i = 0; i < WARMUPS + RUNS; i++) {
        const t = performance.now();
        const res = await http.get(path, { key });
        const ms = performance.now() - t;
        if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.text}`);
        if (i >= WARMUPS) samples.push(ms);
        last = res.body;
      }
      samples.sort((a, b) => a - b);
      return { p50: quantile(samples, 0.5), p95: quantile(samples, 0.95), max: samples[samples.length - 1], body: last };
    };

    const rows: Array<{ name: string; path: string; p50: number; p95: number; max: number; total: string; returned: number }> = [];
    const record = async (name: string, path: string, firstPage: boolean) => {
      const r = await time(path);
      rows.push({
        name,
        path,
        p50: r.p50,
        p95: r.p95,
        max: r.max,
        total: firstPage ? String(r.body.total) : '(not computed on later pages)',
        returned: r.body.data.length,
      });
      return r.body;
    };
    for (const [name, term] of Object.entries(terms)) await record(`search ${name} "${term}"`, `/contacts?search=${encodeURIComponent(term)}`, true);
    const first = await record('no search, first page', '/contacts', true);
    if (!first.cursor) throw new Error('the first page has no cursor');
    await record('no search, second page (cursor)', `/contacts?cursor=${encodeURIComponent(first.cursor)}`, false);
    const commonFirst = (await http.get(`/contacts?search=${encodeURIComponent(terms.common)}`, { key })).body;
    await record(
      'search common, second page (cursor)',
      `/contacts?search=${encodeURIComponent(terms.common)}&cursor=${encodeURIComponent(commonFirst.cursor)}`,
      false,
    );

    console.log(
      `\nGET /contacts over ${CONTACTS.toLocaleString('en')} contacts of one project: ${RUNS} runs after ${WARMUPS} warm-ups, client-side ms (target < ${TARGET_MS} ms)`,
    );
    console.log(`  ${'case'.padEnd(46)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'max'.padStart(7)}  ${'rows'.padStart(4)}  total`);
    for (const r of rows) {
      const verdict = r.p95 < TARGET_MS ? 'ok' : 'MISS';
      console.log(
        `  ${r.name.padEnd(46)} ${r.p50.toFixed(1).padStart(7)} ${r.p95.toFixed(1).padStart(7)} ${r.max.toFixed(1).padStart(7)}  ${String(r.returned).padStart(4)}  ${r.total}  ${verdict}`,
      );
    }

    // The two statements of a first page, exactly as db/contacts/contactQueries.ts builds them.
    const explain = async (label: string, sql: string, params: unknown[]) => {
      const plan = (await db.query(`explain (analyze, buffers) ${sql}`, params)).rows.map((r) => r['QUERY PLAN'] as string);
      // The plan tree (its first lines), then the timings; the planner's own buffer counts are left out.
      const treeEnd = plan.findIndex((l) => /^(Planning|Execution)/.test(l));
      const tree = plan.slice(0, treeEnd < 0 ? plan.length : treeEnd);
      console.log(`\n${label}\n  ${sql.replace(/\s+/g, ' ')}`);
      for (const line of tree.slice(0, 14)) console.log(`  | ${line}`);
      if (tree.length > 14) console.log(`  | … (${tree.length - 14} more lines)`);
      for (const line of plan.filter((l) => /^(Planning Time|Execution Time)/.test(l))) console.log(`  | ${line}`);
    };
    const pageSql = `select * from contacts where project_id = $1 and email like $2 order by created_at desc, id desc limit ${PAGE_LIMIT + 1}`;
    // The search count as the API runs it: exact up to SEARCH_TOTAL_CAP matches, then capped.
    const countSql = `select count(*)::int as n from (select 1 from contacts where project_id = $1 and email like $2 limit ${SEARCH_TOTAL_CAP + 1}) s`;
    const explained: Array<[string, string]> = [
      ['common', terms.common],
      ['rare', terms.rare],
    ];
    // Any case that missed gets its plans too.
    for (const r of rows) {
      const [name] = Object.entries(terms).find(([n, t]) => r.name === `search ${n} "${t}"`) ?? [];
      if (name && r.p95 >= TARGET_MS && !explained.some(([n]) => n === name)) explained.push([name, terms[name]]);
    }
    for (const [name, term] of explained) {
      const pattern = likeContains(term.toLowerCase());
      await explain(`EXPLAIN page query, ${name} term "${term}"`, pageSql, [project.id, pattern]);
      await explain(`EXPLAIN count query, ${name} term "${term}"`, countSql, [project.id, pattern]);
    }
    // The unsearched first page counts the whole project: always shown, it is the slowest path with no search.
    await explain('EXPLAIN page query, no search', `select * from contacts where project_id = $1 order by created_at desc, id desc limit ${PAGE_LIMIT + 1}`, [
      project.id,
    ]);
    await explain('EXPLAIN count query, no search', `select count(*)::int as n from contacts where project_id = $1`, [project.id]);
  } finally {
    await db.end();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
