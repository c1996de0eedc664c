'use strict';
/**
 * Run by `pretest` (scripts/ensure-installed.cjs): the browser tests (the API reference at /docs,
 * the dashboard) drive Debian's Chromium through playwright-core; no browser is ever downloaded.
 * CHROMIUM_PATH names another binary (a machine without Debian's package, or without root).
 * Otherwise /usr/bin/chromium is used, and installed with apt-get when missing and we are root.
 * Plain CommonJS with no dependencies.
 */
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** The browser binary the tests use (test/support/browser.ts reads the same rule). */
function chromiumPath() {
  return process.env.CHROMIUM_PATH || DEBIAN_CHROMIUM;
}

function run(command, args) {
  process.stderr.write(`[mailroom] ${command} ${args.join(' ')}\n`);
  const result = spawnSync(command, args, { stdio: ['ignore', 2, 2], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return result.status === 0;
}

function ensureChromium() {
  const binary = chromiumPath();
  if (fs.existsSync(binary)) return;
  if (process.env.CHROMIUM_PATH) {
    throw new Error(`CHROMIUM_PATH names ${binary}, which does not exist.`);
  }
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = fs.existsSync('/usr/bin/apt-get');
  if (!isRoot || !hasApt) {
    throw new Error(
      `The browser tests need Chromium at ${DEBIAN_CHROMIUM} (Debian: apt-get install -y chromium, as root), or CHROMIUM_PATH naming a Chromium binary.`,
    );
  }
  process.stderr.write("[mailroom] Installing Debian's chromium package for the browser tests (a minute or two)...\n");
  // The package lists of a fresh machine may be missing or stale: update first.
  if (!run('apt-get', ['update', '-q']) || !run('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'chromium'])) {
    throw new Error('apt-get could not install chromium; install it by hand, or set CHROMIUM_PATH.');
  }
  if (!fs.existsSync(DEBIAN_CHROMIUM)) throw new Error(`apt-get installed chromium, yet ${DEBIAN_CHROMIUM} is missing.`);
}

module.exports = { ensureChromium, chromiumPath };
