/**
 * Concurrent CSV imports (issue 13 item 5). Targets, with 10 imports of a 5 MB file uploaded at
 * once: worker peak RSS under 500 MB, GET /health p99 under 100 ms throughout, and total rows/s no
 * lower than a single import's 14,000 rows/s. The API, the worker and a Temporal dev server run
 * as real child processes (bench/support/benchStack.ts) with the default IMPORT_CONCURRENCY
 * unless the environment sets it.
 *
 *   node --import tsx bench/concurrentImports.ts      (or: npm run bench:imports-concurrent)
 *   IMPORTS=4 IMPORT_CONCURRENCY=3 npm run bench:imports-concurrent
 *
 * Ten files just under 5 MiB (the bench:import file, each with its own email prefix so every row
 * creates a contact) are uploaded together to one project. Meanwhile the worker's and the API's
 * resident memory (/proc/<pid>/status) is sampled every 50 ms and GET /health is requested one
 * after another, 50 ms apart, each timed. The run ends when every job reports COMPLETED; then the
 * project must hold exactly one contact per row.
 */
import fs from 'node:fs';
import { Client } from 'pg';
import { startBenchStack, printFigures } from './support/benchStack';
import { buildContactsCsv } from './support/contactsCsv';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { uploadFile } from '../test/support/multipart';

const MAX_BYTES = 5 * 1024 * 1024;
const IMPORTS = Number(process.env.IMPORTS ?? 10);
const SAMPLE_MS = 50;
const TIMEOUT_MS = 15 * 60_000;
const TARGET_RSS_MB = 500;
const TARGET_HEALTH_P99_MS = 100;
const TARGET_ROWS_PER_S = 14_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resident and peak resident memory of a process, in MB. */
function memoryMb(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

async function main() {
  const files = Array.from({ length: IMPORTS }, (_, i) => buildContactsCsv(MAX_BYTES, `f${i}.`));
  const totalRows = files.reduce((sum, f) => sum + f.rows, 0);
  const env: Record<string, string> = { RATE_LIMIT_PER_MINUTE: '100000000' };
  if (process.env.IMPORT_CONCURRENCY) env.IMPORT_CONCURRENCY = process.env.IMPORT_CONCURRENCY;
  const stack = await startBenchStack({ worker: true, env });
  const workerPid = stack.pids.worker!;
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const key = project.secretKey;
    const workerAtStart = memoryMb(workerPid);

    let running = true;
    const rssSamples: Array<{ worker: number; api: number }> = [];
    const sampling = (async () => {
      while (running) {
        const worker = memoryMb(workerPid);
        const api = memoryMb(stack.pids.api);
        if (worker && api) rssSamples.push({ worker: worker.rss, api: api.rss });
        await sleep(SAMPLE_MS);
      }
    })();
    const healthMs: number[] = [];
    let healthFailures = 0;
    const probing = (async () => {
      while (running) {
        const started = performance.now();
        const res = await fetch(`${stack.apiUrl}/health`).catch(() => undefined);
        await res?.arrayBuffer();
        healthMs.push(performance.now() - started);
        if (res?.status !== 200) healthFailures++;
        await sleep(SAMPLE_MS);
      }
    })();

    const t0 = performance.now();
    const uploads = await Promise.all(
      files.map(async (file, i) => {
        const res = await uploadFile(stack.apiUrl, '/contacts/import', key, { name: `contacts-${i}.csv`, content: file.content });
        if (res.status !== 202) throw new Error(`upload ${i} answered ${res.status}: ${JSON.stringify(res.body)}`);
        if (res.body.total !== file.rows) throw new Error(`upload ${i} reported total ${res.body.total}, the file has ${file.rows} rows`);
        return { jobId: res.body.jobId as string, answeredMs: performance.now() - t0 };
      }),
    );

    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    let contacts: number;
    let jobs: Array<{ status: string; succeeded: number; failed: number; queued_ms: number; run_ms: number }>;
    try {
      for (;;) {
        jobs = (
          await db.query(
            `select status, succeeded, failed, extract(epoch from started_at - created_at) * 1000 as queued_ms,
                    extract(epoch from completed_at - started_at) * 1000 as run_ms
             from jobs where id = any($1::uuid[])`,
            [uploads.map((u) => u.jobId)],
          )
        ).rows;
        const ended = jobs.filter((j) => j.status !== 'QUEUED' && j.status !== 'RUNNING');
        if (ended.some((j) => j.status !== 'COMPLETED')) throw new Error(`a job ended ${JSON.stringify(ended.find((j) => j.status !== 'COMPLETED'))}`);
        if (ended.length === uploads.length) break;
        if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`not done after ${TIMEOUT_MS} ms: ${jobs.map((j) => j.status).join()}`);
        await sleep(250);
      }
    } finally {
      [{ n: contacts }] = (await db.query(`select count(*)::int as n from contacts where project_id = $1`, [project.id])).rows;
      await db.end();
    }
    const totalMs = performance.now() - t0;
    running = false;
    await Promise.all([sampling, probing]);

    const workerPeak = Math.max(...rssSamples.map((s) => s.worker));
    const workerHwm = memoryMb(workerPid)?.peak ?? NaN;
    const apiPeak = Math.max(...rssSamples.map((s) => s.api));
    const health = [...healthMs].sort((a, b) => a - b);
    const answered = uploads.map((u) => u.answeredMs).sort((a, b) => a - b);
    const rowsPerS = totalRows / (totalMs / 1000);
    const runS = jobs!.map((j) => Number(j.run_ms) / 1000).sort((a, b) => a - b);
    const queuedS = jobs!.map((j) => Number(j.queued_ms) / 1000).sort((a, b) => a - b);
    const succeeded = jobs!.reduce((sum, j) => sum + j.succeeded, 0);
    const failed = jobs!.reduce((sum, j) => sum + j.failed, 0);

    // The target is judged on the samples taken during the run; VmHWM also counts the worker's
    // start (bundling the workflow code).
    printFigures(`${IMPORTS} concurrent CSV imports, uploaded together → all COMPLETED`, {
      files: `${IMPORTS} × ${files[0].content.length} bytes, ${totalRows} rows in all`,
      IMPORT_CONCURRENCY: process.env.IMPORT_CONCURRENCY ?? 'default (2)',
      'upload answered (202), first/median/last': `${(answered[0] / 1000).toFixed(2)} / ${(percentile(answered, 50) / 1000).toFixed(2)} / ${(answered[answered.length - 1] / 1000).toFixed(2)} s`,
      'job queued → RUNNING, min/max': `${queuedS[0].toFixed(2)} / ${queuedS[queuedS.length - 1].toFixed(2)} s`,
      'job RUNNING → COMPLETED, min/max': `${runS[0].toFixed(2)} / ${runS[runS.length - 1].toFixed(2)} s`,
      'end to end': `${(totalMs / 1000).toFixed(2)} s`,
      'total rows/s': `${Math.round(rowsPerS)} (target ≥ ${TARGET_ROWS_PER_S}: ${rowsPerS >= TARGET_ROWS_PER_S ? 'MET' : 'MISSED'})`,
      'worker RSS at start': `${workerAtStart?.rss.toFixed(0)} MB`,
      'worker peak RSS (sampled / VmHWM)': `${workerPeak.toFixed(0)} / ${workerHwm.toFixed(0)} MB (target < ${TARGET_RSS_MB} during the run: ${workerPeak < TARGET_RSS_MB ? 'MET' : 'MISSED'})`,
      'API peak RSS (sampled)': `${apiPeak.toFixed(0)} MB`,
      'GET /health, requests (non-200)': `${health.length} (${healthFailures})`,
      'GET /health p50 / p99 / max': `${ms(percentile(health, 50))} / ${ms(percentile(health, 99))} / ${ms(health[health.length - 1])} (p99 target < ${TARGET_HEALTH_P99_MS} ms: ${percentile(health, 99) < TARGET_HEALTH_P99_MS ? 'MET' : 'MISSED'})`,
      'jobs succeeded / failed': `${succeeded} / ${failed}`,
      'contacts in the project': contacts!,
    });
    if (succeeded !== totalRows || failed !== 0 || contacts! !== totalRows) {
      throw new Error(`expected ${totalRows} rows imported, jobs counted ${succeeded} succeeded and ${failed} failed, the project holds ${contacts}`);
    }
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
