'use strict';
/**
 * Run by `prestart` and `pretest`: installs dependencies (`npm install`, which follows the lock;
 * not `npm ci`, which refuses a lock that lacks other platforms' optional binaries, as the
 * registry mirror here does not serve all of them) when node_modules is missing or older
 * than package-lock.json, then makes sure the Temporal CLI binary exists (building it once) and,
 * for the tests, Chromium (scripts/ensure-chromium.cjs).
 * Both say what they are doing at least every 10 s. With `--build` (prestart: `npm start` runs
 * the compiled JavaScript) it then compiles dist/ when it is missing or stale (scripts/build.cjs),
 * and builds the dashboard into dist/web/ likewise (scripts/build-web.cjs; a failed dashboard build
 * does not stop the start: the API answers 503 at /app/ until it builds).
 * Plain CommonJS with no dependencies, since it runs before node_modules exists. When everything
 * is in place it only stats files.
 */
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ensureTemporalBinary } = require('./temporal-binary.cjs');
const { formatElapsed } = require('./go-install-progress.cjs');
const { ensureBuilt } = require('./build.cjs');
const { ensureWebBuilt } = require('./build-web.cjs');
const { ensureChromium } = require('./ensure-chromium.cjs');

const PROGRESS_INTERVAL_MS = 10_000;

const root = path.resolve(__dirname, '..');

function mtimeMs(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Packages unpacked into node_modules so far (scoped ones counted one by one): npm's progress we can see. */
function installedPackageCount() {
  const dir = path.join(root, 'node_modules');
  let count = 0;
  try {
    for (const entry of fs.readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      count += entry.startsWith('@') ? fs.readdirSync(path.join(dir, entry)).length : 1;
    }
  } catch {
    /* not created yet */
  }
  return count;
}

/** `npm install` when node_modules is missing or stale, with a progress line every few seconds (npm is quiet when not on a terminal). */
async function ensureDependencies() {
  const lockMtime = mtimeMs(path.join(root, 'package-lock.json'));
  const installedMtime = mtimeMs(path.join(root, 'node_modules', '.package-lock.json'));
  if (installedMtime !== undefined && (lockMtime === undefined || installedMtime >= lockMtime)) return;

  process.stderr.write(
    installedMtime === undefined
      ? '[mailroom] node_modules is missing; running npm install (a minute or two on a fresh machine)...\n'
      : '[mailroom] package-lock.json changed since the last install; running npm install...\n',
  );
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // npm_execpath points at the npm that is running us (via `npm start`/`npm test`); prefer it.
  const npmCli = process.env.npm_execpath;
  // Dev dependencies too, even where NODE_ENV=production: typescript compiles dist/, which npm start runs.
  const [command, args] =
    npmCli && /npm-cli\.js$/.test(npmCli)
      ? [process.execPath, [npmCli, 'install', '--include=dev', '--no-audit', '--no-fund']]
      : [npm, ['install', '--include=dev', '--no-audit', '--no-fund']];
  const startedAt = Date.now();
  const progress = setInterval(() => {
    process.stderr.write(
      `[mailroom] Installing npm packages: ${formatElapsed(Date.now() - startedAt)} elapsed, ${installedPackageCount()} packages in node_modules so far\n`,
    );
  }, PROGRESS_INTERVAL_MS);
  const { code, signal } = await new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 2, 2], shell: process.platform === 'win32' });
    child.once('error', reject);
    child.once('close', (exitCode, exitSignal) => resolve({ code: exitCode, signal: exitSignal }));
  }).finally(() => clearInterval(progress));
  if (code !== 0) {
    process.stderr.write(`[mailroom] npm install failed (exit ${code ?? signal}).\n`);
    process.exit(code || 1);
  }
  process.stderr.write(`[mailroom] npm install finished in ${formatElapsed(Date.now() - startedAt)}.\n`);
  // npm leaves this file untouched when nothing changed; mark the install as current.
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (fs.existsSync(marker)) fs.utimesSync(marker, new Date(), new Date());
}

async function main() {
  await ensureDependencies();
  ensureTemporalBinary();
  if (process.argv.includes('--build')) {
    ensureBuilt();
    try {
      ensureWebBuilt();
    } catch (err) {
      process.stderr.write(`[mailroom] ${err.message} The API starts without the dashboard.\n`);
    }
  }
  // Only the tests drive a browser; `npm start` needs none.
  else ensureChromium();
}

main().catch((err) => {
  process.stderr.write(`[mailroom] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
