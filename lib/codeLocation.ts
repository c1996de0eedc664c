import path from 'node:path';

/**
 * Where Mailroom's code runs from. `npm start` and the Docker image run the JavaScript tsc compiled
 * into dist/ (scripts/build.cjs); tests, benchmarks and scripts such as `npm run migrate` run the
 * TypeScript sources through tsx or jest. Code that starts our own modules as new processes, or
 * reads files that are not code (scripts/*.cjs, deploy/), asks here rather than assuming either layout.
 */

/** True when this process runs the compiled JavaScript in dist/. */
export const runsCompiled = path.extname(__filename) === '.js';

/** The project root (package.json, scripts/*.cjs, deploy/, dist/), whichever layout runs. */
export const projectRoot = path.resolve(__dirname, runsCompiled ? '../..' : '..');

/**
 * The node arguments that run one of our modules (`'worker/main'`) as a process: its compiled file in
 * dist/, or its source through tsx's loader. By default the way this process runs.
 */
export function moduleArgs(module: string, from: 'dist' | 'sources' = runsCompiled ? 'dist' : 'sources'): string[] {
  return from === 'dist' ? [path.join(projectRoot, 'dist', `${module}.js`)] : ['--import', 'tsx', path.join(projectRoot, `${module}.ts`)];
}

/** package.json's version: the API description's `info.version` follows it (contract 19). */
export function packageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const manifest = JSON.parse(require('node:fs').readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}
