'use strict';
/**
 * Run by `prestart` and `pretest`: installs dependencies (`npm install`, which follows the lock;
 * not `npm ci`, which refuses a lock that lacks other platforms' optional binaries, as the
 * registry mirror here does not serve all of them) when node_modules is missing or older
 * than package-lock.json, then makes sure the Temporal CLI binary exists (building it once).
 * Plain CommonJS with no dependencies, since it runs before node_modules exists. When
 * everything is in place it only stats a few files.
 */
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { ensureTemporalBinary } = require('./temporal-binary.cjs');

const root = path.resolve(__dirname, '..');

function mtimeMs(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function ensureDependencies() {
  const lockMtime = mtimeMs(path.join(root, 'package-lock.json'));
  const installedMtime = mtimeMs(path.join(root, 'node_modules', '.package-lock.json'));
  if (installedMtime !== undefined && (lockMtime === undefined || installedMtime >= lockMtime)) return;

  process.stderr.write(
    installedMtime === undefined
      ? '[mailroom] node_modules is missing; running npm install...\n'
      : '[mailroom] package-lock.json changed since the last install; running npm install...\n',
  );
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // npm_execpath points at the npm that is running us (via `npm start`/`npm test`); prefer it.
  const npmCli = process.env.npm_execpath;
  const [command, args] =
    npmCli && /npm-cli\.js$/.test(npmCli)
      ? [process.execPath, [npmCli, 'install', '--no-audit', '--no-fund']]
      : [npm, ['install', '--no-audit', '--no-fund']];
  const result = spawnSync(command, args, { cwd: root, stdio: ['ignore', 2, 2], shell: process.platform === 'win32' });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    process.stderr.write(`[mailroom] npm install failed (exit ${result.status ?? result.signal}).\n`);
    process.exit(result.status || 1);
  }
  // npm leaves this file untouched when nothing changed; mark the install as current.
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (fs.existsSync(marker)) fs.utimesSync(marker, new Date(), new Date());
}

function main() {
  ensureDependencies();
  try {
    ensureTemporalBinary();
  } catch (err) {
    process.stderr.write(`[mailroom] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

main();
