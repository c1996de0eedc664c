'use strict';
/**
 * Fails when `npm ci` would refuse the committed package.json and package-lock.json: the first
 * step of the Dockerfile (and of a user's clean install) runs `npm ci`, while our own install
 * runs `npm install`, which quietly writes a lock without the platform packages the registry it
 * talks to lacks. Runs `npm ci --dry-run --ignore-scripts` on a copy of the two files in a
 * temporary folder, so node_modules here is not touched (a few seconds: npm reads the registry's
 * metadata it has not cached). Part of `npm test`; also `npm run check:lock`.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-lock-check-'));
try {
  for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(root, file), path.join(scratch, file));
  const npmCli = process.env.npm_execpath;
  const [command, args] = npmCli && /npm-cli\.js$/.test(npmCli) ? [process.execPath, [npmCli]] : [process.platform === 'win32' ? 'npm.cmd' : 'npm', []];
  const result = spawnSync(command, [...args, 'ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: scratch,
    encoding: 'utf8',
    shell: process.platform === 'win32',
  });
  if (result.status !== 0) {
    process.stderr.write(result.stdout + result.stderr);
    process.stderr.write(
      '[mailroom] package-lock.json is not what `npm ci` accepts for package.json (above). Often a dependency whose\n' +
        'platform packages this registry does not serve: pin a version whose platform packages it does serve.\n',
    );
    process.exitCode = 1;
  }
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
