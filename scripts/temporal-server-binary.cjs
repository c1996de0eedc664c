'use strict';
/**
 * Locates (and on first use builds) a real Temporal server for `npm run test:cluster`: the
 * server (go.temporal.io/server/cmd/server), its SQL schema tool (cmd/tools/sql) and the
 * PostgreSQL schema files, built from the Go module proxy into
 * ~/.cache/mailroom/bin/temporal-server-<version>/ (or $MAILROOM_TOOLS_DIR).
 *
 * Same approach as scripts/temporal-binary.cjs (lock file, staging directory, rename into
 * place); written standalone so it can later be folded into that script's build function.
 * v1.32.1 is the newest release this machine's Go (1.26.8) builds: v1.32.2 needs Go 1.26.10.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync, execFileSync } = require('node:child_process');

const TEMPORAL_SERVER_VERSION = 'v1.32.1';
const LOCK_STALE_MS = 60 * 60 * 1000;
const BUILD_ATTEMPTS = 2;

function toolsDir() {
  const dir = process.env.MAILROOM_TOOLS_DIR;
  return dir ? path.resolve(dir) : path.join(os.homedir(), '.cache', 'mailroom', 'bin');
}

/** Where the server, the SQL tool and the schema files live once built. */
function temporalServerPaths() {
  const dir = path.join(toolsDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  return {
    dir,
    server: path.join(dir, 'temporal-server'),
    sqlTool: path.join(dir, 'temporal-sql-tool'),
    schemaDir: path.join(dir, 'schema-postgresql-v12'),
    version: TEMPORAL_SERVER_VERSION,
  };
}

const isFile = (file) => fs.existsSync(file) && fs.statSync(file).isFile();
const sleepSync = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const complete = (p) => isFile(p.server) && isFile(p.sqlTool) && fs.existsSync(p.schemaDir);

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function acquireLock(lockFile, done) {
  let announced = false;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return () => fs.rmSync(lockFile, { force: true });
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    if (done()) return undefined;
    try {
      const pid = Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10);
      if (!Number.isInteger(pid) || !pidAlive(pid) || Date.now() - fs.statSync(lockFile).mtimeMs > LOCK_STALE_MS) {
        fs.rmSync(lockFile, { force: true });
        continue;
      }
    } catch {
      continue;
    }
    if (!announced) process.stderr.write(`[mailroom] Another process is building the Temporal server (lock ${lockFile}); waiting...\n`);
    announced = true;
    sleepSync(2000);
  }
}

/**
 * Makes sure the server, SQL tool and schema exist, building them with `go install` when
 * missing (about 10 to 60 minutes on two cores, once). Synchronous; returns temporalServerPaths().
 */
function ensureTemporalServer() {
  const paths = temporalServerPaths();
  if (complete(paths)) return paths;
  fs.mkdirSync(path.dirname(paths.dir), { recursive: true });
  const release = acquireLock(path.join(path.dirname(paths.dir), `.temporal-server-${TEMPORAL_SERVER_VERSION}.lock`), () => complete(paths));
  if (!release) return paths;
  const staging = fs.mkdtempSync(path.join(path.dirname(paths.dir), '.build-server-'));
  try {
    if (complete(paths)) return paths;
    const modules = [`go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`, `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`];
    process.stderr.write(`[mailroom] Building the Temporal server ${TEMPORAL_SERVER_VERSION} (go install ${modules.join(' ')}); this takes many minutes once.\n`);
    let status = 1;
    for (let attempt = 1; attempt <= BUILD_ATTEMPTS && status !== 0; attempt++) {
      // Output goes to our stderr: a long build shows its progress.
      status = spawnSync('go', ['install', ...modules], { cwd: os.tmpdir(), env: { ...process.env, GOBIN: staging }, stdio: ['ignore', 2, 2] }).status ?? 1;
    }
    if (status !== 0) {
      throw new Error(`Building the Temporal server failed. To build it by hand:\n  cd /tmp && GOBIN=${paths.dir} go install ${modules.join(' ')}`);
    }
    const modCache = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
    const schemaSource = path.join(modCache, `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
    fs.cpSync(schemaSource, path.join(staging, 'schema-postgresql-v12'), { recursive: true });
    fs.renameSync(path.join(staging, 'server'), path.join(staging, 'temporal-server'));
    fs.renameSync(path.join(staging, 'sql'), path.join(staging, 'temporal-sql-tool'));
    fs.rmSync(paths.dir, { recursive: true, force: true });
    fs.renameSync(staging, paths.dir);
    fs.chmodSync(paths.dir, 0o755);
    return paths;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
    release();
  }
}

module.exports = { ensureTemporalServer, temporalServerPaths, TEMPORAL_SERVER_VERSION };

if (require.main === module) {
  const paths = ensureTemporalServer();
  process.stdout.write(`${JSON.stringify(paths)}\n`);
}
