import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

// The typed client (client/) is generated from the API description by `npm run openapi`. Its files
// are committed so that the dashboard and users build against them; they must be the current
// description's, or a response that changed shape would not break its callers' build.
// (A child process: openapi-typescript loads ES modules that jest's module registry cannot.)

test('client/openapi.json and client/apiTypes.ts are those of the API as it is (else: npm run openapi)', async () => {
  const root = path.join(__dirname, '../..');
  const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/writeApiDescription.ts', '--check'], { cwd: root }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
  );
  expect(run).toEqual({ code: 0, stderr: '' });
}, 60_000);
