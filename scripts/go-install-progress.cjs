'use strict';
/**
 * Runs one `go install -v <module@version>` with go's own output kept in a log file and, on
 * our stderr, one summary line every few seconds ("2m15s elapsed, downloading modules (143
 * so far)") instead of hundreds of `go: downloading` lines or minutes of silence.
 *
 * Run as a child process by scripts/temporal-binary.cjs, whose build is synchronous (its
 * callers are): spawnSync can't watch output as it comes, this process can. Also exports
 * `summarizeGoOutput`, which a process waiting for someone else's build uses on that build's log.
 *
 *   node go-install-progress.cjs '<json: {goBin, args, logFile, label, intervalMs, heartbeatFile}>'
 *
 * Exits with go's exit code (128 + the signal number when go was killed). Plain CommonJS with no dependencies (runs before node_modules exists).
 */
const fs = require('node:fs');
const os = require('node:os');
const { spawn } = require('node:child_process');

const DOWNLOADING = /^go: downloading \S+ \S+/;
/** With -v, go prints each package it compiles as a bare import path. */
const PACKAGE_PATH = /^[A-Za-z0-9_.~-]+(\/[A-Za-z0-9_.~+-]+)*$/;

/** Counts what go has done so far from its (-v) output: modules downloaded, packages compiled. */
function summarizeGoOutput(text) {
  let downloaded = 0;
  let compiled = 0;
  let lastPhase = 'resolving';
  for (const line of text.split('\n')) {
    if (DOWNLOADING.test(line)) {
      downloaded += 1;
      lastPhase = 'downloading';
    } else if (PACKAGE_PATH.test(line.trim()) && line.trim()) {
      compiled += 1;
      lastPhase = 'compiling';
    }
  }
  return { downloaded, compiled, phase: lastPhase };
}

function formatElapsed(ms) {
  const seconds = Math.floor(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes ? `${minutes}m${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`;
}

/** "downloading modules (143 so far)", "compiling packages (512 so far; 287 modules downloaded)", ... */
function describeProgress({ downloaded, compiled, phase }) {
  if (phase === 'downloading') return `downloading modules (${downloaded} so far)`;
  if (phase === 'compiling') {
    return `compiling packages (${compiled} so far${downloaded ? `; ${downloaded} modules downloaded` : ''})`;
  }
  return 'resolving the module version';
}

/** The lines of go's output that say what went wrong: without the download and -v package lines. */
function errorLines(text) {
  return text.split('\n').filter((line) => line.trim() && !DOWNLOADING.test(line) && !PACKAGE_PATH.test(line.trim()));
}

function main() {
  const { goBin, args, logFile, label, intervalMs, heartbeatFile } = JSON.parse(process.argv[2]);
  const log = fs.openSync(logFile, 'w');
  const startedAt = Date.now();
  let output = '';
  const child = spawn(goBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const onData = (chunk) => {
    output += chunk.toString('utf8');
    fs.writeSync(log, chunk);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);

  const timer = setInterval(() => {
    process.stderr.write(`[mailroom] ${label}: ${formatElapsed(Date.now() - startedAt)} elapsed, ${describeProgress(summarizeGoOutput(output))}\n`);
    // Tells processes waiting on the build lock that this build is alive (see temporal-binary.cjs).
    if (heartbeatFile) {
      const now = new Date();
      try {
        fs.utimesSync(heartbeatFile, now, now);
      } catch {
        /* the lock is gone: our parent is exiting */
      }
    }
  }, intervalMs);

  child.on('error', (err) => {
    onData(`${String((err && err.stack) || err)}\n`);
    clearInterval(timer);
    fs.closeSync(log);
    process.exit(127);
  });
  child.on('close', (code, signal) => {
    clearInterval(timer);
    if (signal) onData(`go was killed by ${signal}\n`);
    fs.closeSync(log);
    // A signalled go exits like a shell reports it (128 + signal number), which the caller does not retry.
    process.exit(code === null ? 128 + (os.constants.signals[signal] || 0) : code);
  });
}

if (require.main === module) main();

module.exports = { summarizeGoOutput, describeProgress, formatElapsed, errorLines };
