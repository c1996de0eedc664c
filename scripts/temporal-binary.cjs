'use strict';
/**
 * Locates (and on first use builds) the Temporal CLI, whose `server start-dev` runs the
 * embedded Temporal server for `npm start` and the tests.
 *
 * Plain CommonJS with no dependencies: it runs from `prestart`/`pretest`, possibly before
 * node_modules exists. The binary lives outside the clone (~/.cache/mailroom/bin by default)
 * so a fresh clone or CI checkout reuses an earlier build.
 *
 * The first build downloads a few hundred modules from the Go module proxy and compiles them,
 * which takes minutes. So it reports progress at least every 15 s (scripts/go-install-progress.cjs),
 * and a failed attempt (a download broken off by the network, typically) is retried after a
 * pause: modules already downloaded stay in the module cache, so a retry resumes where it stopped.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { summarizeGoOutput, describeProgress, formatElapsed, errorLines } = require('./go-install-progress.cjs');

const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
const TEMPORAL_CLI_VERSION = 'v1.5.1';

const DEFAULT_ATTEMPTS = 4;
/** Pause before the 2nd, 3rd, 4th... attempt; the last one repeats. */
const DEFAULT_RETRY_PAUSES_MS = [15_000, 30_000, 60_000];
const PROGRESS_INTERVAL_MS = 10_000;
const ERROR_TAIL_LINES = 30;
/** How much of go's error to show when an attempt failed and another one follows. */
const RETRY_REASON_LINES = 5;
/** The builder touches its lock at every progress line; a lock untouched this long is abandoned. */
const LOCK_STALE_MS = 5 * 60 * 1000;

/** Where Go-built tools live: `$MAILROOM_TOOLS_DIR` if set, else `~/.cache/mailroom/bin` (outside any clone, so clones share it). */
function toolsDir() {
  const dir = process.env.MAILROOM_TOOLS_DIR;
  return dir ? path.resolve(dir) : path.join(os.homedir(), '.cache', 'mailroom', 'bin');
}

/** `$MAILROOM_TOOLS_DIR/temporal` if set, else `~/.cache/mailroom/bin/temporal`. */
function temporalBinaryPath() {
  return path.join(toolsDir(), process.platform === 'win32' ? 'temporal.exe' : 'temporal');
}

function isFile(file) {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
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
  if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
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
 * Takes `lockFile` so two processes (say `npm start` and `npm test` in parallel) don't both
 * run a multi-minute build; while waiting, reports the other build's progress from its log.
 * Returns a release function, or undefined when the binary appeared while waiting.
 */
function acquireBuildLock(lockFile, binary, logFile, label, progressIntervalMs) {
  const waitingSince = Date.now();
  let lastReport = 0;
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
    const now = Date.now();
    if (lastReport === 0 || now - lastReport >= progressIntervalMs) {
      const other = describeProgress(summarizeGoOutput(readText(logFile)));
      process.stderr.write(
        lastReport === 0
          ? `[mailroom] Another process is building ${label} (lock ${lockFile}, log ${logFile}); waiting for it...\n`
          : `[mailroom] Waiting for ${label}: ${formatElapsed(now - waitingSince)} elapsed, the other build is ${other}\n`,
      );
      lastReport = now;
    }
    sleepSync(1000);
  }
}

function shellQuote(value) {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Waits `ms` before the next attempt, saying so at least every 15 s. */
function pauseBeforeRetry(ms, label, nextAttempt, attempts) {
  const step = 15_000;
  for (let left = ms; left > 0; left -= step) {
    process.stderr.write(`[mailroom] ${label}: retrying (attempt ${nextAttempt} of ${attempts}) in ${Math.ceil(left / 1000)} s\n`);
    sleepSync(Math.min(step, left));
  }
}

/**
 * Makes sure `binary` exists, building it with `go install <target>` when missing: under a
 * lock, into a private directory then renamed into place (nobody ever runs a half-written
 * binary), with progress lines and retries. Synchronous. Returns the binary path; throws
 * with go's error and the command to run by hand when every attempt failed.
 *
 * options.binary          where the binary must end up (its basename is what go builds)
 * options.target          `module/path/cmd@version`
 * options.label           what to call it in messages, e.g. "the Temporal CLI v1.5.1"
 * options.env             extra environment for go (e.g. GOPROXY), also shown in the manual command
 * options.attempts        how many times to run go before giving up (default 4)
 * options.retryPausesMs   pause before each retry; the last repeats (default 15 s, 30 s, 60 s)
 * options.progressIntervalMs  how often to print a progress line (default 10 s)
 */
function ensureGoBinary(options) {
  const { binary, target, label } = options;
  const extraEnv = options.env || {};
  const attempts = options.attempts || DEFAULT_ATTEMPTS;
  const pauses = options.retryPausesMs || DEFAULT_RETRY_PAUSES_MS;
  const progressIntervalMs = options.progressIntervalMs || PROGRESS_INTERVAL_MS;
  if (isFile(binary)) return binary;

  const dir = path.dirname(binary);
  const name = path.basename(binary).replace(/\.exe$/, '');
  fs.mkdirSync(dir, { recursive: true });
  const lockFile = path.join(dir, `.${name}-build.lock`);
  // Kept after the build: after a failure it holds go's whole output.
  const logFile = path.join(dir, `${name}-build.log`);
  const release = acquireBuildLock(lockFile, binary, logFile, label, progressIntervalMs);
  if (!release) return binary;

  // Holding the lock, any staging directory left here is from a build that was interrupted.
  for (const entry of fs.readdirSync(dir)) {
    if (entry.startsWith(`.${name}-staging-`)) fs.rmSync(path.join(dir, entry), { recursive: true, force: true });
  }
  const stagingDir = fs.mkdtempSync(path.join(dir, `.${name}-staging-`));
  try {
    if (isFile(binary)) return binary; // finished by someone else between our check and the lock
    const goBin = findGo();
    const envPrefix = Object.entries(extraEnv)
      .map(([key, value]) => `${key}=${shellQuote(String(value))} `)
      .join('');
    const manual = `cd ${shellQuote(os.tmpdir())} && ${envPrefix}GOBIN=${shellQuote(dir)} go install ${target}`;
    if (!goBin) {
      throw new Error(
        `${label} is missing (${binary}) and Go was not found on PATH or at /usr/local/go/bin/go. ` +
          `Install Go (https://go.dev/dl/) and run:\n  ${manual}\n` +
          `or point MAILROOM_TOOLS_DIR at a directory containing a '${path.basename(binary)}' binary.`,
      );
    }
    process.stderr.write(
      `[mailroom] Building ${label} into ${dir} with ${goBin}: a first build downloads and compiles its Go modules, ` +
        `which takes several minutes (progress every ${Math.round(progressIntervalMs / 1000)} s; go's output is in ${logFile}). ` +
        `Later runs reuse it.\n`,
    );

    const env = { ...process.env, ...extraEnv, GOBIN: stagingDir };
    const built = path.join(stagingDir, path.basename(binary));
    const startedAt = Date.now();
    let status = 0;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      const runnerOptions = {
        goBin,
        args: ['install', '-v', target],
        logFile,
        label: attempt > 1 ? `Building ${label} (attempt ${attempt} of ${attempts})` : `Building ${label}`,
        intervalMs: progressIntervalMs,
        heartbeatFile: lockFile,
      };
      const result = spawnSync(process.execPath, [path.join(__dirname, 'go-install-progress.cjs'), JSON.stringify(runnerOptions)], {
        cwd: os.tmpdir(),
        env,
        stdio: ['ignore', 2, 2],
      });
      if (result.error) throw result.error;
      // Ctrl-C (or a kill) stops the build for good: it is the user's decision, not a network error.
      if (result.signal || result.status >= 128) {
        throw new Error(`Building ${label} was interrupted (${result.signal || `exit ${result.status}`}); the next start resumes it.`);
      }
      status = result.status;
      if (status === 0 && isFile(built)) {
        process.stderr.write(`[mailroom] Built ${label} in ${formatElapsed(Date.now() - startedAt)}.\n`);
        fs.renameSync(built, binary);
        return binary;
      }
      if (attempt === attempts) break;
      const reason = (errorLines(readText(logFile)).slice(-RETRY_REASON_LINES).join('\n') || `go exited with ${status}`).replace(/^/gm, '  ');
      process.stderr.write(
        `[mailroom] Building ${label} failed (attempt ${attempt} of ${attempts}):\n${reason}\n` +
          `[mailroom] Modules downloaded so far stay in Go's module cache, so the next attempt resumes.\n`,
      );
      pauseBeforeRetry(pauses[Math.min(attempt - 1, pauses.length - 1)], `Building ${label}`, attempt + 1, attempts);
    }
    const output = readText(logFile);
    const lines = errorLines(output);
    const tail = (lines.length ? lines : output.split('\n')).slice(-ERROR_TAIL_LINES).join('\n');
    throw new Error(
      `Building ${label} failed ${attempts === 1 ? 'once' : `${attempts} times`} (go exited with ${status}). ` +
        `Go's error:\n${tail.trimEnd()}\n(full output: ${logFile})\n\n` +
        `To build it by hand, run:\n  ${manual}`,
    );
  } finally {
    fs.rmSync(stagingDir, { recursive: true, force: true });
    release();
  }
}

/**
 * Makes sure the Temporal CLI exists at `temporalBinaryPath()`, building it with
 * `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` when missing. Synchronous.
 * Returns the binary path.
 */
function ensureTemporalBinary() {
  return ensureGoBinary({
    binary: temporalBinaryPath(),
    target: `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`,
    label: `the Temporal CLI ${TEMPORAL_CLI_VERSION}`,
  });
}

module.exports = { toolsDir, temporalBinaryPath, ensureTemporalBinary, ensureGoBinary, TEMPORAL_CLI_VERSION };
