/**
 * `npm start`: runs the whole of Mailroom on one machine. Starts an embedded PostgreSQL
 * unless DATABASE_URL is set and a Temporal dev server unless TEMPORAL_ADDRESS is set (both
 * keep their data under DATA_DIR), applies migrations, then runs the API and the worker as
 * child processes. It supervises all four: one that dies is restarted with a backoff (PostgreSQL
 * and Temporal on the same data and port, so the API and worker find them again), and after too
 * many crashes in a minute the whole stack stops, quoting the last output. Once the API
 * answers /health it prints what to do next. On SIGINT/SIGTERM it stops the API and worker
 * first (they drain), then Temporal, then PostgreSQL. A second Ctrl-C forces an immediate exit.
 * `npm start` runs it compiled, as dist/scripts/start.js (prestart builds dist/ when it is stale).
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../lib/config';
import type { Config } from '../lib/config';
import { createLogger } from '../lib/logger';
import type { Logger } from '../lib/logger';
import { startEmbeddedPostgres, ensureDatabase, embeddedPostgresClusterDir } from '../launcher/embeddedPostgres';
import type { EmbeddedPostgres } from '../launcher/embeddedPostgres';
import { startTemporalDevServer } from '../launcher/temporalDevServer';
import type { TemporalDevServer } from '../launcher/temporalDevServer';
import { runMigrations } from '../db/migrate';
import { SupervisedProcess } from '../launcher/supervisedProcess';
import { SupervisedDependency } from '../launcher/supervisedDependency';
import type { GiveUpSummary } from '../launcher/restartPolicy';
import { moduleArgs, projectRoot } from '../lib/codeLocation';
// From the project root: tsc does not copy it into dist/, and it keeps its state beside itself.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalBinary } = require(path.join(projectRoot, 'scripts', 'temporal-binary.cjs')) as { ensureTemporalBinary: () => string };

/** npm forwards the terminal's SIGINT to us, so one Ctrl-C can arrive twice; repeats this close together are one. */
const SIGNAL_DEBOUNCE_MS = 1000;
/** Time a child gets beyond its own drain setting before it is killed. */
const STOP_MARGIN_MS = 5000;
const HEALTH_POLL_MS = 500;
/** How long /health may answer other than "ok" after the API listens before we say what is down. */
const HEALTH_WARN_AFTER_MS = 30_000;

class StartupAborted extends Error {}

let config: Config;
let log: Logger;
let postgres: SupervisedDependency<EmbeddedPostgres> | undefined;
let temporal: SupervisedDependency<TemporalDevServer> | undefined;
let temporalUi: string | undefined;
const children: SupervisedProcess[] = [];
let startup: Promise<void> | undefined;
let shutdownPromise: Promise<void> | undefined;
let firstSignalAt = 0;

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/**
 * Synchronous stdout: this process exits right after its last lines, and with pino's default
 * asynchronous stream those can come out reordered (an in-flight write races the exit flush).
 */
function startLogger(level: string): Logger {
  return createLogger({ level, name: 'start', destination: pino.destination({ dest: 1, sync: true }) });
}

function checkpoint(): void {
  if (shutdownPromise) throw new StartupAborted();
}

/** The API and the worker, each with the time it drains for on SIGTERM. */
function childGraceMs(name: string): number {
  return (name === 'api' ? config.apiShutdownGraceMs : config.shutdownTimeoutMs) + STOP_MARGIN_MS;
}

/**
 * The worker's V8 heap is capped: its live heap stays well below the cap even with imports
 * running, but without a cap V8 lets garbage grow into slack, and the worker's peak resident
 * memory with it, while the cap costs imports little speed. The main thread's young generation is
 * V8's default (16 MB semi-spaces on 64-bit): against 2 MB it spared a campaign ~0.08 ms of the
 * worker's CPU a mail in garbage collection in a quiet sitting (a slower one could not tell it from
 * the noise), and the worker's peak stays under 300 MiB (270–279)
 * since it runs one workflow thread (worker/createWorker.ts) and loads mailauth only for received
 * mail. It is not passed as --max-semi-space-size: V8 would apply that to every thread, and the
 * message build thread keeps a small young generation of its own (mail/mime/messageBuildPool.ts).
 * The figures: docs/guides/deployment.md, "systemd or Kubernetes", and docs/benchmarks.md,
 * `bench:imports-concurrent` and `bench:campaign`.
 * docker-compose.yml and the benchmarks start the worker with the same flags.
 */
const WORKER_NODE_ARGS = ['--max-old-space-size=384'];
/**
 * glibc's malloc arenas for the worker (unless set): by default one per thread up to 8 per core,
 * each holding freed memory of its own; with 2 a 20,000-contact campaign peaked at 240–247 MiB
 * against 267–274 at the same rate and CPU (docs/benchmarks.md, `bench:campaign`).
 */
const WORKER_ENV = { MALLOC_ARENA_MAX: '2' };

/**
 * Runs the API or the worker the way this launcher runs: `npm start` runs dist/scripts/start.js, so
 * they run compiled too (with less resident memory than under tsx: README, "Two commands"); the
 * tests start the launcher from its source, and the children then run from theirs through tsx.
 */
function runChild(name: 'api' | 'worker' | 'webhooks', entry: 'api/main' | 'worker/main', env: NodeJS.ProcessEnv, onLine?: (line: string) => void): void {
  const child = new SupervisedProcess({
    name,
    args: [...(entry === 'worker/main' ? WORKER_NODE_ARGS : []), ...moduleArgs(entry)],
    cwd: process.cwd(),
    env: entry === 'worker/main' ? { ...WORKER_ENV, ...env } : env,
    log,
    onLine,
    onGiveUp: (summary) => giveUp(`the ${name}`, summary),
  });
  children.push(child);
  child.start();
}

/** Something supervised crashed too often: Mailroom stops. */
function giveUp(what: string, { crashes, stableAfterMs, lastOutput }: GiveUpSummary): void {
  // For the person at the terminal: the JSON line before has the same, machine-readable.
  process.stderr.write(
    `\nMailroom is stopping: ${what} crashed ${crashes} times in a row, each within ${stableAfterMs / 1000} s of starting. Its last output:\n` +
      lastOutput.map((line) => `  | ${line}`).join('\n') +
      '\n\n',
  );
  void shutdown(1, `${what} kept crashing`);
}

/**
 * Watches the API's log for the port it listens on, then polls /health until it answers "ok" and
 * says so (the first time with the line that tells a new user what to do next). Again after each
 * restart of the API.
 */
function apiReadiness(): (line: string) => void {
  let announced = false;
  let polling = false;
  return (line) => {
    if (polling || !line.includes('"api listening"')) return;
    let port: number;
    try {
      port = Number(JSON.parse(line).port);
    } catch {
      return;
    }
    polling = true;
    void waitForHealth(port).then((healthy) => {
      polling = false;
      if (!healthy) return;
      const api = config.publicUrl;
      if (announced) {
        log.info({ api }, 'api is answering again');
        return;
      }
      announced = true;
      log.info({ api, temporalUi: temporalUi ?? null }, 'Mailroom is ready');
      process.stdout.write(
        `Mailroom is ready: API ${api}` + (temporalUi ? ` · Temporal UI ${temporalUi}` : '') + ' · first account, project and keys: README "Quick start"\n',
      );
    });
  };
}

/**
 * True once GET /health answers 200 with status "ok"; false if Mailroom shuts down first. A 200
 * "degraded" (Temporal away, contract 2) keeps the API in a load balancer's rotation, but is not
 * ready: the API could not start a campaign or an import yet.
 */
async function waitForHealth(port: number): Promise<boolean> {
  const started = Date.now();
  let warned = false;
  while (!shutdownPromise) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5000) });
      const body = await res.text();
      if (res.status === 200 && isOk(body)) return true;
      if (!warned && Date.now() - started > HEALTH_WARN_AFTER_MS) {
        warned = true;
        log.warn({ status: res.status, health: body }, `the API is up but /health answers ${res.status}: ${body}`);
      }
    } catch {
      // not listening (any more): a restart brings a new "api listening" line
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
  }
  return false;
}

function isOk(body: string): boolean {
  try {
    return (JSON.parse(body) as { status?: unknown }).status === 'ok';
  } catch {
    return false;
  }
}

async function runStartup(): Promise<void> {
  const dataDir = config.dataDir;
  fs.mkdirSync(dataDir, { recursive: true });

  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const port = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 5433);
    const dir = embeddedPostgresClusterDir(path.join(dataDir, 'postgres')); // as root, maybe under /var/lib/mailroom
    log.info({ dataDir: dir, port }, 'starting embedded PostgreSQL');
    postgres = new SupervisedDependency({
      name: 'postgres',
      label: 'embedded PostgreSQL',
      log,
      start: async () => {
        const server = await startEmbeddedPostgres({ dataDir: dir, port, detached: true });
        const pids = server.leftoversStopped;
        if (pids.length)
          log.warn({ process: 'postgres', pids }, `stopped ${pids.length} process${pids.length === 1 ? '' : 'es'} a PostgreSQL that died had left running`);
        return server;
      },
      onGiveUp: (summary) => giveUp('the embedded PostgreSQL', summary),
    });
    const server = await postgres.start();
    log.info({ process: 'postgres', childPid: server.pid }, `embedded PostgreSQL started (pid ${server.pid})`);
    checkpoint();
    databaseUrl = await ensureDatabase(server.url, 'mailroom');
    log.info({ databaseUrl: redactUrl(databaseUrl) }, 'embedded PostgreSQL ready');
    checkpoint();
  }

  let temporalAddress = config.temporalAddress;
  if (!temporalAddress) {
    const binaryPath = ensureTemporalBinary();
    checkpoint();
    const port = Number(process.env.EMBEDDED_TEMPORAL_PORT ?? 7233);
    const uiPort = Number(process.env.EMBEDDED_TEMPORAL_UI_PORT ?? port + 1000);
    const dir = path.join(dataDir, 'temporal');
    fs.mkdirSync(dir, { recursive: true });
    log.info({ dataDir: dir, port, uiPort, namespace: config.temporalNamespace }, 'starting Temporal dev server');
    temporal = new SupervisedDependency({
      name: 'temporal',
      label: 'Temporal dev server',
      log,
      start: () =>
        startTemporalDevServer({
          binaryPath,
          dbFilename: path.join(dir, 'temporal.sqlite'),
          port,
          uiPort,
          namespace: config.temporalNamespace,
          logFile: path.join(dir, 'server.log'),
          detached: true,
        }),
      onGiveUp: (summary) => giveUp('the Temporal dev server', summary),
    });
    const server = await temporal.start();
    temporalAddress = server.address;
    temporalUi = server.uiUrl;
    log.info(
      { process: 'temporal', childPid: server.pid, address: temporalAddress, ui: temporalUi, log: path.join(dir, 'server.log') },
      `Temporal dev server ready (pid ${server.pid})`,
    );
    checkpoint();
  }

  const applied = await runMigrations(databaseUrl);
  log.info({ applied }, applied.length ? 'migrations applied' : 'database schema up to date');
  checkpoint();

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    // The dev server's UI, which the dashboard links workflow executions to (GET /config's temporalUi).
    ...(temporalUi && !process.env.TEMPORAL_UI_URL ? { TEMPORAL_UI_URL: temporalUi } : {}),
  };
  runChild('api', 'api/main', env, apiReadiness());
  if (process.env.WORKER_ROLE === 'all') runChild('worker', 'worker/main', env);
  else {
    // Webhook delivery in a process of its own at WEBHOOK_WORKER_NICE: on shared cores, mail and
    // the API come first (docs/benchmarks.md, "Outbound webhooks"). Its health port would clash.
    runChild('worker', 'worker/main', { ...env, WORKER_ROLE: 'main' });
    runChild('webhooks', 'worker/main', { ...env, WORKER_ROLE: 'webhooks', WORKER_HEALTH_PORT: undefined });
  }
  log.info(
    { api: config.publicUrl, temporalUi: temporalUi ?? null, temporalAddress, namespace: config.temporalNamespace },
    `Mailroom is starting: API at ${config.publicUrl}` + (temporalUi ? `, Temporal UI at ${temporalUi}` : ''),
  );
}

/**
 * Stops everything in order and exits; later calls return the same promise. The API and worker
 * get SIGINT when this process did (a person at the terminal: the API skips its load-balancer
 * notice, API_SHUTDOWN_NOTICE_MS), SIGTERM otherwise.
 */
function shutdown(exitCode: number, reason: string, childSignal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (shutdownPromise) return shutdownPromise;
  shutdownPromise = (async () => {
    log.info({ reason }, 'shutting down');
    // From here a server that exits stays down: the API and worker drain without them coming back.
    temporal?.endSupervision();
    postgres?.endSupervision();
    // Let an in-flight startup step finish (it stops at the next checkpoint), so nothing it starts is missed.
    await startup?.catch(() => undefined);
    await Promise.all(children.map((child) => child.stop(childGraceMs(child.name), childSignal)));
    if (temporal) {
      try {
        await temporal.stop();
        log.info('Temporal dev server stopped');
      } catch (err) {
        log.error({ err }, 'stopping the Temporal dev server failed');
      }
    }
    if (postgres) {
      try {
        await postgres.stop();
        log.info('embedded PostgreSQL stopped');
      } catch (err) {
        log.error({ err }, 'stopping embedded PostgreSQL failed');
      }
    }
    log.info({ exitCode }, 'Mailroom stopped');
    process.exit(exitCode);
  })();
  return shutdownPromise;
}

function onSignal(signal: NodeJS.Signals): void {
  const now = Date.now();
  if (!shutdownPromise) {
    firstSignalAt = now;
    void shutdown(0, signal, signal === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
    return;
  }
  if (now - firstSignalAt < SIGNAL_DEBOUNCE_MS) return;
  log.warn({ signal }, 'second signal: forcing exit');
  for (const child of children) child.kill();
  // Exit handlers in launcher/embeddedPostgres and launcher/temporalDevServer signal those servers.
  process.exit(130);
}

function main(): void {
  try {
    config = loadConfig();
  } catch (err) {
    startLogger('info').fatal({ err }, err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
  log = startLogger(config.logLevel);

  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception');
    void shutdown(1, 'uncaught exception');
  });
  process.on('unhandledRejection', (err) => {
    log.fatal({ err }, 'unhandled rejection');
    void shutdown(1, 'unhandled rejection');
  });

  startup = runStartup();
  startup.catch((err: unknown) => {
    if (err instanceof StartupAborted) return;
    log.fatal({ err }, 'startup failed');
    void shutdown(1, 'startup failed');
  });
}

main();
