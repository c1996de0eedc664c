'use strict';
/**
 * Compiles the TypeScript that `npm start` and the Docker image run into dist/ (tsconfig.build.json):
 * without tsx's loader and the sources it transformed, the worker and the API idle with less
 * resident memory (the figures: README, "Two commands"). Tests keep running the sources.
 *
 * `npm run build` (`node scripts/build.cjs`) always runs tsc; ensureBuilt(), called by `prestart`
 * and the benchmarks, only when dist/ is missing or older than a file it is built from, so a start
 * with nothing changed costs a walk over file times. tsc runs incrementally (dist/.tsbuildinfo), so
 * a build after an edit takes less than one from nothing (how long: README, "Two commands"). A
 * type error fails the build and leaves dist/ as it was. Plain CommonJS with no dependency but
 * typescript itself.
 *
 * tsconfig.build.json is read here as plain JSON (no comments there). It leaves out test/, bench/ and
 * scripts/recordWorkflowHistories.ts, which drives the test stack (imports test/): those run
 * through tsx or jest only.
 */
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { newestFile, newestOf, stampIsCurrent } = require('./buildFreshness.cjs');

const root = path.resolve(__dirname, '..');
const TSCONFIG = path.join(root, 'tsconfig.build.json');
/** Written when a build succeeds, with the time the build started, so an edit made during it counts as newer. */
const STAMP = path.join(root, 'dist', '.build-stamp');

/** Newest time among the build's inputs: its folders' sources (tsconfig.build.json `include`), the tsconfigs and the lock (types). */
function newestInput() {
  const { include, exclude = [] } = JSON.parse(fs.readFileSync(TSCONFIG, 'utf8'));
  const excluded = new Set(exclude.map((file) => path.join(root, file)));
  let newest = 0;
  const source = (name, file) => name.endsWith('.ts') && !excluded.has(file);
  for (const dir of include) newest = Math.max(newest, newestFile(path.join(root, dir), source));
  return Math.max(newest, newestOf(['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'].map((file) => path.join(root, file))));
}

function isUpToDate() {
  return stampIsCurrent(STAMP, newestInput);
}

/**
 * Runs tsc on tsconfig.build.json. Throws when it cannot (TypeScript missing, or a type error, whose
 * messages tsc has printed): callers are `npm start`'s prestart (ensure-installed.cjs, which stops
 * the start with the message), the benchmarks, and `npm run build` below.
 */
function build() {
  const startedAt = new Date();
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
  } catch {
    throw new Error('TypeScript is not installed, so dist/ cannot be built: run `npm install` (dev dependencies included).');
  }
  process.stderr.write('[mailroom] Compiling TypeScript into dist/ (tsc, up to about 20 s)...\n');
  const result = spawnSync(process.execPath, [tsc, '-p', TSCONFIG], { cwd: root, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) throw new Error(`Compiling failed (tsc exit ${result.status ?? result.signal}, its errors above); dist/ is unchanged.`);
  fs.writeFileSync(STAMP, '');
  fs.utimesSync(STAMP, startedAt, startedAt);
  process.stderr.write(`[mailroom] Compiled in ${((Date.now() - startedAt.getTime()) / 1000).toFixed(1)} s.\n`);
}

/** Builds dist/ when it is missing or older than its sources. */
function ensureBuilt() {
  if (!isUpToDate()) build();
}

module.exports = { ensureBuilt, build };

if (require.main === module) {
  try {
    build();
  } catch (err) {
    process.stderr.write(`[mailroom] ${err.message}\n`);
    process.exitCode = 1;
  }
}
