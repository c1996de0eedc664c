import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDatabase, dropDatabase, startEmbeddedPostgres } from '../../launcher/embeddedPostgres';
import { runMigrations } from '../../db/migrate';
import { startTemporalDevServer } from '../../launcher/temporalDevServer';
import { findFreePort } from '../../lib/freePort';
import { spawnService, spawnApi, type ChildService } from '../../test/support/processes';
import { labelProcess } from './processCpu';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalBinary } = require('../../scripts/temporal-binary.cjs');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before the build), without types to import
const { ensureBuilt } = require('../../scripts/build.cjs') as { ensureBuilt: () => void };

/**
 * What the API and worker processes run: the compiled JavaScript in dist/, as `npm start` and the
 * Docker image do (the worker's memory differs: about 230 MiB idle against 290 MiB under tsx), built first
 * when stale. BENCH_FROM_SOURCES=1 runs the TypeScript sources through tsx instead.
 */
export const servicesFrom: 'dist' | 'sources' = process.env.BENCH_FROM_SOURCES === '1' ? 'sources' : 'dist';

/**
 * What a benchmark measures against: a fresh database (on BENCH_DATABASE_URL's server, by default
 * the machine's PostgreSQL at 127.0.0.1:5432, else an embedded one), and the API (and worker) as
 * real child processes, exactly as `npm start` runs them (servicesFrom). The load generator runs in this process,
 * on the same 2-core machine.
 */
export interface BenchStack {
  apiUrl: string;
  databaseUrl: string;
  env: Record<string, string>;
  /** Process ids of the API and (when started) the worker and the webhook worker, to sample their memory. */
  pids: { api: number; worker?: number; webhooks?: number };
  /** The API's JSON log lines so far (LOG_LEVEL info: one `request` line per request, with its durationMs and requestId). */
  apiLog: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

async function serverUrl(stops: Array<() => Promise<void>>): Promise<string> {
  const configured = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  try {
    await ensureDatabase(configured, 'postgres');
    return configured;
  } catch {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-bench-pg-'));
    fs.chmodSync(dir, 0o755);
    const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await findFreePort() });
    stops.push(pg.stop);
    return pg.url;
  }
}

export async function startBenchStack(options: { worker?: boolean; env?: Record<string, string> } = {}): Promise<BenchStack> {
  if (servicesFrom === 'dist') ensureBuilt();
  const stops: Array<() => Promise<void>> = [];
  const server = await serverUrl(stops);
  const dbName = `mailroom_bench_${crypto.randomBytes(4).toString('hex')}`;
  const databaseUrl = await ensureDatabase(server, dbName);
  await runMigrations(databaseUrl);
  stops.unshift(() => dropDatabase(server, dbName));

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-bench-data-'));
  let temporalAddress = '127.0.0.1:1'; // the API's Temporal client is lazy; track never calls it
  if (options.worker) {
    // BENCH_TEMPORAL_DB_FILE=1 keeps the dev server's state in a SQLite file, as `npm start` does
    // (DATA_DIR/temporal/temporal.sqlite), instead of in memory.
    const temporal = await startTemporalDevServer({
      binaryPath: ensureTemporalBinary(),
      port: 0,
      uiPort: false,
      namespace: 'default',
      ...(process.env.BENCH_TEMPORAL_DB_FILE === '1' ? { dbFilename: path.join(dataDir, 'temporal.sqlite') } : {}),
    });
    temporalAddress = temporal.address;
    stops.unshift(temporal.stop);
  }
  const env = {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: `bench-${crypto.randomBytes(4).toString('hex')}`,
    DATA_DIR: dataDir,
    SECRET: crypto.randomBytes(24).toString('base64url'),
    PORT: '0',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  const children: ChildService[] = [];
  let worker: ChildService | undefined;
  let webhooks: ChildService | undefined;
  if (options.worker) {
    // The worker runs with the heap cap `npm start` and docker-compose give it; BENCH_WORKER_NODE_ARGS
    // ("" for none, or e.g. "--max-old-space-size=256") runs it with other V8 settings. As `npm start`
    // does, webhook delivery runs in a process of its own (WORKER_ROLE), unless BENCH_WORKER_ROLE=all.
    const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '--max-old-space-size=384').split(' ').filter(Boolean);
    const split = process.env.BENCH_WORKER_ROLE !== 'all';
    // As scripts/start.ts gives it; MALLOC_ARENA_MAX in the bench's environment tries another value.
    const arenas = { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' };
    worker = spawnService('worker/main.ts', { ...env, ...arenas, LOG_LEVEL: 'info', WORKER_ROLE: split ? 'main' : 'all' }, nodeArgs, servicesFrom);
    children.push(worker);
    if (split) {
      webhooks = spawnService('worker/main.ts', { ...env, ...arenas, LOG_LEVEL: 'info', WORKER_ROLE: 'webhooks' }, nodeArgs, servicesFrom);
      children.push(webhooks);
      labelProcess(webhooks.process.pid!, 'webhooks');
      await webhooks.waitForLine((l) => l.msg === 'worker started', 120_000);
    }
    await worker.waitForLine((l) => l.msg === 'worker started', 120_000);
  }
  // BENCH_API_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the API under load.
  const api = await spawnApi({ ...env, LOG_LEVEL: 'info' }, (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean), servicesFrom);
  children.push(api);
  return {
    apiUrl: api.url,
    databaseUrl,
    env,
    pids: { api: api.process.pid!, worker: worker?.process.pid, webhooks: webhooks?.process.pid },
    apiLog: api.lines,
    async stop() {
      for (const child of children) {
        child.kill('SIGTERM');
        await child.exited;
      }
      for (const stop of stops) await stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function printFigures(title: string, figures: Record<string, string | number>) {
  console.log(`\n${title}`);
  for (const [name, value] of Object.entries(figures)) console.log(`  ${name.padEnd(34)} ${value}`);
}
