/**
 * `npm start`: runs the whole of Mailroom on one machine. Starts an embedded PostgreSQL
 * unless DATABASE_URL is set and a Temporal dev server unless TEMPORAL_ADDRESS is set (both
 * keep their data under DATA_DIR), applies migrations, then runs the API and the worker as
 * child processes. On SIGINT/SIGTERM it stops the API and worker first (they drain), then
 * Temporal, then PostgreSQL. A second Ctrl-C forces an immediate exit.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import pino from 'pino';
import { loadConfig } from '../lib/config';
import type { Config } from '../lib/config';
import { createLogger } from '../lib/logger';
import type { Logger } from '../lib/logger';
import { startEmbeddedPostgres, ensureDatabase, embeddedPostgresClusterDir } from '../db/embeddedPostgres';
import type { EmbeddedPostgres } from '../db/embeddedPostgres';
import { startTemporalDevServer } from '../temporal-config/devServer';
import type { TemporalDevServer } from '../temporal-config/devServer';
import { runMigrations } from '../db/migrate';
import { stopChildProcess } from '../lib/childProcess';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalBinary } = require('./temporal-binary.cjs') as { ensureTemporalBinary: () => string };

const ROOT = path.resolve(__dirname, '..');
/** npm forwards the terminal's SIGINT to us, so one Ctrl-C can arrive twice; repeats this close together are one. */
const SIGNAL_DEBOUNCE_MS = 1000;

interface Managed {
  name: 'api' | 'worker';
  child: ChildProcess;
  exited: Promise<void>;
}

class StartupAborted extends Error {}

let config: Config;
let log: Logger;
let postgres: EmbeddedPostgres | undefined;
let temporal: TemporalDevServer | undefined;
const children: Managed[] = [];
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

function runChild(name: Managed['name'], entry: string, env: NodeJS.ProcessEnv): void {
  // Own process group: a terminal Ctrl-C reaches only us, and we decide the order things stop in.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry)], {
    cwd: process.cwd(),
    env,
    stdio: 'inherit',
    detached: true,
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      if (!shutdownPromise) {
        log.error({ process: name, code, signal }, `${name} exited unexpectedly; stopping Mailroom`);
        void shutdown(code || 1, `${name} exited`);
      } else {
        log.info({ process: name, code, signal }, `${name} stopped`);
      }
      resolve();
    });
    child.on('error', (err) => {
      if (child.pid !== undefined) return; // a failed kill; the exit handler covers the rest
      log.error({ process: name, err }, `could not start ${name}`);
      if (!shutdownPromise) void shutdown(1, `${name} failed to start`);
      resolve();
    });
  });
  children.push({ name, child, exited });
}

async function stopChild({ name, child, exited }: Managed, graceMs: number): Promise<void> {
  if (await stopChildProcess(child, { graceMs })) log.warn({ process: name, graceMs }, `${name} did not stop in time; it was killed`);
  await exited;
}

async function runStartup(): Promise<void> {
  const dataDir = config.dataDir;
  fs.mkdirSync(dataDir, { recursive: true });

  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const port = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 5433);
    const dir = embeddedPostgresClusterDir(path.join(dataDir, 'postgres')); // as root, maybe under /var/lib/mailroom
    log.info({ dataDir: dir, port }, 'starting embedded PostgreSQL');
    postgres = await startEmbeddedPostgres({ dataDir: dir, port, detached: true });
    checkpoint();
    databaseUrl = await ensureDatabase(postgres.url, 'mailroom');
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
    temporal = await startTemporalDevServer({
      binaryPath,
      dbFilename: path.join(dir, 'temporal.sqlite'),
      port,
      uiPort,
      namespace: config.temporalNamespace,
      logFile: path.join(dir, 'server.log'),
      detached: true,
    });
    temporalAddress = temporal.address;
    log.info({ address: temporalAddress, ui: temporal.uiUrl, log: path.join(dir, 'server.log') }, 'Temporal dev server ready');
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
  };
  runChild('api', 'api/main.ts', env);
  runChild('worker', 'worker/main.ts', env);
  log.info(
    { api: config.publicUrl, temporalUi: temporal?.uiUrl ?? null, temporalAddress, namespace: config.temporalNamespace },
    `Mailroom is starting: API at ${config.publicUrl}` + (temporal?.uiUrl ? `, Temporal UI at ${temporal.uiUrl}` : ''),
  );
}

/** Stops everything in order and exits; later calls return the same promise. */
function shutdown(exitCode: number, reason: string): Promise<void> {
  if (shutdownPromise) return shutdownPromise;
  shutdownPromise = (async () => {
    log.info({ reason }, 'shutting down');
    // Let an in-flight startup step finish (it stops at the next checkpoint), so nothing it starts is missed.
    await startup?.catch(() => undefined);
    const graceMs = config.shutdownTimeoutMs + 5000;
    await Promise.all(children.map((managed) => stopChild(managed, graceMs)));
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
    void shutdown(0, signal);
    return;
  }
  if (now - firstSignalAt < SIGNAL_DEBOUNCE_MS) return;
  log.warn({ signal }, 'second signal: forcing exit');
  for (const { child } of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  // Exit handlers in db/embeddedPostgres and temporal-config/devServer signal those servers.
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
