'use strict';
/**
 * Locates (and on first use builds) the Temporal CLI, whose `server start-dev` runs the
 * embedded Temporal server for `npm start` and the tests.
 *
 * Plain CommonJS with no dependencies: it runs from `prestart`/`pretest`, possibly before
 * node_modules exists. The binary lives outside the clone (~/.cache/mailroom/bin by default)
 * so a fresh clone or CI checkout reuses an earlier build.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
const TEMPORAL_CLI_VERSION = 'v1.5.1';
const OUTPUT_TAIL_CHARS = 4000;
const LOCK_STALE_MS = 30 * 60 * 1000;

/** `$MAILROOM_TOOLS_DIR/temporal` if set, else `~/.cache/mailroom/bin/temporal`. */
function temporalBinaryPath() {
  const toolsDir = process.env.MAILROOM_TOOLS_DIR;
  const dir = toolsDir ? path.resolve(toolsDir) : path.join(os.homedir(), '.cache', 'mailroom', 'bin');
  return path.join(dir, process.platform === 'win32' ? 'temporal.exe' : 'temporal');
}

function isFile(file) {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The `go` on PATH, else /usr/local/go/bin/go, else undefined. */
function findGo() {
  const exe = process.platform === 'win32' ? 'go.exe' : 'go';
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (dir && isFile(path.join(dir, exe))) return path.join(dir, exe);
  }
  const fallback = '/usr/local/go/bin/go';
  return isFile(fallback) ? fallback : undefined;
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/**
 * Takes `<dir>/.temporal-build.lock` so two processes (say `npm start` and `npm test` in
 * parallel) don't both run a multi-minute build. Returns a release function, or undefined
 * when the binary appeared while waiting for another builder.
 */
function acquireBuildLock(lockFile, binary) {
  let announced = false;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return () => fs.rmSync(lockFile, { force: true });
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    if (isFile(binary)) return undefined;
    let stale = false;
    try {
      const pid = Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10);
      const age = Date.now() - fs.statSync(lockFile).mtimeMs;
      stale = !Number.isInteger(pid) || !pidAlive(pid) || age > LOCK_STALE_MS;
    } catch {
      continue; // the lock vanished between our calls: try again
    }
    if (stale) {
      fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (!announced) {
      process.stderr.write(`[mailroom] Another process is building the Temporal CLI (lock ${lockFile}); waiting for it...\n`);
      announced = true;
    }
    sleepSync(1000);
  }
}

/**
 * Runs `go` with its output shown live on our stderr and also kept in `logFile`, so a failure
 * can quote it. A small node child does the tee because spawnSync can't both inherit and capture.
 */
function runTeed(goBin, args, env, cwd, logFile) {
  const tee = `
    const { spawn } = require('node:child_process');
    const fs = require('node:fs');
    const [goBin, logFile, ...args] = process.argv.slice(1);
    const log = fs.openSync(logFile, 'w');
    const child = spawn(goBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const onData = (chunk) => { process.stderr.write(chunk); fs.writeSync(log, chunk); };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err) => { onData(String(err && err.stack || err) + '\\n'); process.exit(127); });
    child.on('close', (code, signal) => {
      if (signal) onData('go was killed by ' + signal + '\\n');
      process.exit(code === null ? 1 : code);
    });
  `;
  const result = spawnSync(process.execPath, ['-e', tee, goBin, logFile, ...args], {
    cwd,
    env,
    stdio: ['ignore', 2, 2],
  });
  if (result.error) throw result.error;
  return result.status === null ? 1 : result.status;
}

/**
 * Makes sure the Temporal CLI exists at `temporalBinaryPath()`, building it with
 * `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` when missing. Synchronous.
 * Returns the binary path.
 */
function ensureTemporalBinary() {
  const binary = temporalBinaryPath();
  if (isFile(binary)) return binary;

  const dir = path.dirname(binary);
  fs.mkdirSync(dir, { recursive: true });
  const release = acquireBuildLock(path.join(dir, '.temporal-build.lock'), binary);
  if (!release) return binary;

  // Build into a private directory, then rename into place, so nobody ever runs a half-written binary.
  const stagingDir = fs.mkdtempSync(path.join(dir, '.build-'));
  const logFile = path.join(stagingDir, 'go-install.log');
  try {
    if (isFile(binary)) return binary; // finished by someone else between our check and the lock
    const goBin = findGo();
    const target = `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`;
    const manual = `cd ${os.tmpdir()} && GOBIN=${dir} go install ${target}`;
    if (!goBin) {
      throw new Error(
        `The Temporal CLI is missing (${binary}) and Go was not found on PATH or at /usr/local/go/bin/go. ` +
          `Install Go (https://go.dev/dl/) and run:\n  ${manual}\n` +
          `or point MAILROOM_TOOLS_DIR at a directory containing a 'temporal' binary.`,
      );
    }
    process.stderr.write(
      `[mailroom] Building the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${dir} with ${goBin}. ` +
        `The first build takes a few minutes; later runs reuse it.\n`,
    );
    const status = runTeed(goBin, ['install', target], { ...process.env, GOBIN: stagingDir }, os.tmpdir(), logFile);
    const built = path.join(stagingDir, path.basename(binary));
    if (status !== 0 || !isFile(built)) {
      let output = '';
      try {
        output = fs.readFileSync(logFile, 'utf8');
      } catch {
        /* no output captured */
      }
      const tail = output.length > OUTPUT_TAIL_CHARS ? `...${output.slice(-OUTPUT_TAIL_CHARS)}` : output;
      throw new Error(
        `Building the Temporal CLI failed (go exited with ${status}). Go output (tail):\n${tail.trimEnd()}\n\n` +
          `To build it by hand, run:\n  ${manual}`,
      );
    }
    fs.renameSync(built, binary);
    return binary;
  } finally {
    fs.rmSync(stagingDir, { recursive: true, force: true });
    release();
  }
}

module.exports = { temporalBinaryPath, ensureTemporalBinary, TEMPORAL_CLI_VERSION };
