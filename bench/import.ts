/**
 * CSV import: target — a 5 MB file (about 100,000 rows) imported in under 10 seconds end to end,
 * against the local PostgreSQL, with the API, the worker and a Temporal dev server as real child
 * processes on the same machine.
 *
 *   node --import tsx bench/import.ts        (or: npm run bench:import)
 *
 * Builds a realistic CSV just under 5 MiB (email, first_name, last_name, plan, score,
 * signed_up_at; every email distinct, so every row creates a contact), uploads it with a
 * multipart POST /contacts/import, and times from the start of the upload until
 * GET /contacts/import/:jobId (polled every 100 ms) reports COMPLETED. Then checks that the
 * project holds exactly one contact per row, in the database and through GET /contacts.
 */
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { uploadFile } from '../test/support/multipart';
import { buildContactsCsv } from './support/contactsCsv';

const MAX_BYTES = 5 * 1024 * 1024;
const POLL_MS = 100;
const TIMEOUT_MS = 10 * 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const { content, rows } = buildContactsCsv(MAX_BYTES);
  const stack = await startBenchStack({ worker: true, env: { RATE_LIMIT_PER_MINUTE: '100000000' } });
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const key = project.secretKey;

    const t0 = performance.now();
    const upload = await uploadFile(stack.apiUrl, '/contacts/import', key, { name: 'contacts.csv', content });
    const uploadMs = performance.now() - t0;
    if (upload.status !== 202) throw new Error(`upload answered ${upload.status}: ${JSON.stringify(upload.body)}`);
    const jobId: string = upload.body.jobId;

    // Progress samples: when the first batch lands and how processed grows, to tell queueing
    // (Temporal, activity start, CSV parse) from batch work.
    let job: any;
    let firstProgressMs: number | undefined;
    const samples: Array<{ ms: number; processed: number }> = [];
    for (;;) {
      const res = await http.get(`/contacts/import/${jobId}`, { key });
      if (res.status !== 200) throw new Error(`GET /contacts/import/${jobId} answered ${res.status}: ${res.text}`);
      job = res.body;
      const now = performance.now() - t0;
      if (job.processed > 0 && firstProgressMs === undefined) firstProgressMs = now;
      samples.push({ ms: now, processed: job.processed });
      if (job.status === 'COMPLETED') break;
      if (job.status === 'FAILED' || job.status === 'CANCELLED') throw new Error(`job ended ${job.status}: ${JSON.stringify(job)}`);
      if (now > TIMEOUT_MS) throw new Error(`job not done after ${TIMEOUT_MS} ms: ${JSON.stringify(job)}`);
      await sleep(POLL_MS);
    }
    const totalMs = performance.now() - t0;

    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    let dbCount: number;
    let timing: { queued_ms: number; run_ms: number };
    try {
      const [{ n }] = (await db.query(`select count(*)::int as n from contacts where project_id = $1`, [project.id])).rows;
      dbCount = n;
      // Server-side clocks of the job record: creation → RUNNING → COMPLETED.
      [timing] = (
        await db.query(
          `select extract(epoch from started_at - created_at) * 1000 as queued_ms, extract(epoch from completed_at - started_at) * 1000 as run_ms from jobs where id = $1`,
          [jobId],
        )
      ).rows;
    } finally {
      await db.end();
    }
    const apiTotal = (await http.get('/contacts?limit=1', { key })).body.total;

    // Batch throughput once batches flow: from the first sample with progress to the last.
    const flowing = samples.filter((s) => s.processed > 0);
    const firstFlow = flowing[0];
    const lastFlow = flowing[flowing.length - 1];
    const batchRate =
      lastFlow && firstFlow && lastFlow.ms > firstFlow.ms ? (lastFlow.processed - firstFlow.processed) / ((lastFlow.ms - firstFlow.ms) / 1000) : NaN;

    printFigures('CSV import, POST /contacts/import → COMPLETED (polled every 100 ms)', {
      'file size (bytes)': `${content.length} (${(content.length / 1024 / 1024).toFixed(3)} MiB, limit ${MAX_BYTES})`,
      rows,
      'upload response (ms)': `${uploadMs.toFixed(0)} (status ${upload.status})`,
      'first progress seen (s)': firstProgressMs === undefined ? 'n/a' : (firstProgressMs / 1000).toFixed(2),
      'job queued → RUNNING (s)': (Number(timing.queued_ms) / 1000).toFixed(2),
      'job RUNNING → COMPLETED (s)': (Number(timing.run_ms) / 1000).toFixed(2),
      'batch phase rows/s': Number.isFinite(batchRate) ? Math.round(batchRate) : 'n/a',
      'end to end (s)': (totalMs / 1000).toFixed(2),
      'rows/s end to end': Math.round(rows / (totalMs / 1000)),
      'job succeeded / failed': `${job.succeeded} / ${job.failed}`,
      'contacts in DB / GET total': `${dbCount} / ${apiTotal}`,
      'target (< 10 s)': totalMs < 10_000 ? 'MET' : 'MISSED',
    });
    if (job.succeeded !== rows || job.failed !== 0) throw new Error(`job counted ${job.succeeded} succeeded, ${job.failed} failed for ${rows} rows`);
    if (dbCount !== rows || apiTotal !== rows) throw new Error(`expected ${rows} contacts, found ${dbCount} in the database and ${apiTotal} through the API`);
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
