'use strict';
/**
 * Builds the dashboard (web/, contract 21) into dist/web/, which the API serves at /app/
 * (api/routes/dashboardRoutes.ts): Vite with web/vite.config.mjs, then a gzip copy beside each
 * text file (`app.js.gz`), which the API sends to clients that accept gzip, and a line naming the
 * gzip size of the JavaScript the log-in route loads (contract 21: at most 500 KB).
 *
 * `node scripts/build-web.cjs` always builds; ensureWebBuilt(), called by `prestart` (through
 * ensure-installed.cjs, beside the server's build.cjs) and the dashboard's tests, only when
 * dist/web/ is missing or older than a file it is built from (web/, the typed client, shared/,
 * the lock), so a start with nothing changed costs a walk over file times. A failed build throws
 * (Vite has printed why) and leaves no stamp, so the next start builds again; until then /app/
 * answers 503. Plain CommonJS, like build.cjs: Vite runs as its own process.
 */
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { spawnSync } = require('node:child_process');
const { newestFile, newestOf, stampIsCurrent } = require('./buildFreshness.cjs');

const root = path.resolve(__dirname, '..');
const OUT_DIR = path.join(root, 'dist', 'web');
const CONFIG = path.join(root, 'web', 'vite.config.mjs');
/** Written when a build succeeds, with the time the build started, so an edit made during it counts as newer. */
const STAMP = path.join(OUT_DIR, '.build-stamp');
/** Contract 21: the first load of /app/ (the log-in route) transfers at most this much JavaScript, gzip-compressed. */
const LOGIN_ROUTE_JS_BUDGET = 500 * 1024;
/** Files worth compressing; images other than SVG are compressed already. */
const COMPRESSIBLE = /\.(js|css|html|svg|json|txt|map)$/;

/** Newest time among the build's inputs: every file of web/, the client and shared modules it imports, the lock (package versions). */
function newestInput() {
  const ts = (name) => /\.tsx?$/.test(name);
  return Math.max(
    newestFile(path.join(root, 'web'), () => true),
    newestFile(path.join(root, 'client'), ts),
    newestFile(path.join(root, 'shared'), ts),
    newestOf([path.join(root, 'package-lock.json')]),
  );
}

function isUpToDate() {
  return stampIsCurrent(STAMP, newestInput);
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir, prefix = '') {
  return fs.readdirSync(path.join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(prefix, entry.name);
    return entry.isDirectory() ? filesUnder(dir, relative) : [relative];
  });
}

/** Writes `<file>.gz` beside each compressible file of the build (best compression: done once, served many times). */
function writeGzipCopies() {
  for (const file of filesUnder(OUT_DIR)) {
    if (!COMPRESSIBLE.test(file) || file.startsWith('.vite')) continue;
    const source = path.join(OUT_DIR, file);
    fs.writeFileSync(`${source}.gz`, zlib.gzipSync(fs.readFileSync(source), { level: zlib.constants.Z_BEST_COMPRESSION }));
  }
}

/**
 * The JavaScript files the log-in route loads, from Vite's manifest: the entry (index.html) and
 * the chunks it imports statically, transitively. The pages behind the log-in are lazy chunks,
 * loaded when they are opened, so they are not counted.
 */
function loginRouteScripts() {
  const manifest = JSON.parse(fs.readFileSync(path.join(OUT_DIR, '.vite', 'manifest.json'), 'utf8'));
  const files = new Set();
  const visit = (key) => {
    const chunk = manifest[key];
    if (!chunk || files.has(chunk.file)) return;
    files.add(chunk.file);
    for (const imported of chunk.imports ?? []) visit(imported);
  };
  visit('index.html');
  return [...files].filter((file) => file.endsWith('.js'));
}

/** Bytes of JavaScript the log-in route transfers, gzip-compressed as the API serves it (the .gz copies). */
function loginRouteJavaScriptBytes() {
  return loginRouteScripts().reduce((sum, file) => sum + fs.statSync(path.join(OUT_DIR, `${file}.gz`)).size, 0);
}

const kilobytes = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

/**
 * Runs Vite and writes the gzip copies. Throws when it cannot (Vite missing, or a build error,
 * which Vite has printed): callers are `npm start`'s prestart (ensure-installed.cjs, which stops
 * the start with the message), the dashboard's tests, and `npm run build:web` below.
 */
function buildWeb() {
  const startedAt = new Date();
  let vitePackage;
  try {
    vitePackage = require.resolve('vite/package.json', { paths: [root] });
  } catch {
    throw new Error('Vite is not installed, so the dashboard cannot be built: run `npm install` (dev dependencies included).');
  }
  const vite = path.join(path.dirname(vitePackage), 'bin', 'vite.js');
  process.stderr.write('[mailroom] Building the dashboard into dist/web/ (Vite, a few seconds)...\n');
  fs.rmSync(STAMP, { force: true });
  const result = spawnSync(process.execPath, [vite, 'build', '--config', CONFIG, '--logLevel', 'warn'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (result.status !== 0)
    throw new Error(`Building the dashboard failed (vite exit ${result.status ?? result.signal}, its errors above); /app/ answers 503 until it builds.`);
  writeGzipCopies();
  const loginBytes = loginRouteJavaScriptBytes();
  fs.writeFileSync(STAMP, '');
  fs.utimesSync(STAMP, startedAt, startedAt);
  process.stderr.write(
    `[mailroom] Built the dashboard in ${((Date.now() - startedAt.getTime()) / 1000).toFixed(1)} s; ` +
      `the log-in route loads ${kilobytes(loginBytes)} of JavaScript gzip-compressed (budget ${kilobytes(LOGIN_ROUTE_JS_BUDGET)}).\n`,
  );
  if (loginBytes > LOGIN_ROUTE_JS_BUDGET) {
    process.stderr.write('[mailroom] That is over contract 21’s budget: load the new code lazily (a lazy route or import()).\n');
  }
}

/** Builds dist/web/ when it is missing or older than its sources. */
function ensureWebBuilt() {
  if (!isUpToDate()) buildWeb();
}

module.exports = { ensureWebBuilt, buildWeb, loginRouteScripts, loginRouteJavaScriptBytes, LOGIN_ROUTE_JS_BUDGET, OUT_DIR };

if (require.main === module) {
  try {
    buildWeb();
  } catch (err) {
    process.stderr.write(`[mailroom] ${err.message}\n`);
    process.exitCode = 1;
  }
}
