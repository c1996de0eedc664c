/**
 * `npm start` and the image run the JavaScript tsc compiles into dist/, while every other test runs
 * the TypeScript sources. This one builds dist/ (as `npm start`'s prestart does) and runs the API and
 * the worker from it, so a path that only works from the sources (a module found next to its own
 * file, the message-build thread, the workflow bundle) fails here rather than at a user's first start.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi, spawnService } from '../support/processes';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';

jest.setTimeout(240_000);

const root = path.resolve(__dirname, '../..');

describe('the compiled JavaScript that npm start runs', () => {
  it('builds, and its API and worker accept a send and deliver it into the outbox', async () => {
    // The same build check as prestart: compiles only when dist/ is missing or stale.
    const build = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.join(root, 'scripts/build.cjs'))}).ensureBuilt()`], {
      cwd: root,
      encoding: 'utf8',
    });
    expect({ status: build.status, stderr: build.status === 0 ? '' : build.stderr }).toEqual({ status: 0, stderr: '' });

    const databaseUrl = await createTestDatabase();
    const env = { ...testEnv(), DATABASE_URL: databaseUrl };
    const worker = spawnService('worker/main.ts', env, ['--max-old-space-size=384'], 'dist');
    let api: Awaited<ReturnType<typeof spawnApi>> | undefined;
    try {
      await worker.waitForLine((l) => l.msg === 'worker started', 120_000);
      api = await spawnApi(env, [], 'dist');
      // Both really run from dist/, not through tsx.
      expect(worker.process.spawnargs.some((arg) => arg.endsWith(path.join('dist', 'worker', 'main.js')))).toBe(true);
      expect(api.process.spawnargs.some((arg) => arg.endsWith(path.join('dist', 'api', 'main.js')))).toBe(true);

      const http = new HttpClient(api.url);
      // Ready once the database and Temporal answer (the worker may still be registering search attributes).
      await eventually(async () => expect((await http.get('/health')).body).toMatchObject({ status: 'ok' }), 60_000, 250);
      const { project } = await accountWithProject(http);
      const sent = await http.post(
        '/v1/send',
        { to: 'reader@example.com', from: `hello@${OUTBOX_SENDER_DOMAIN}`, subject: 'From dist', body: '<p>Hello {{plan}}</p>', data: { plan: 'pro' } },
        { key: project.secretKey },
      );
      expect(sent.status).toBe(200);
      // Delivered by the compiled worker: its workflow bundle, the delivery activity and the build thread.
      const captured = await eventually(async () => {
        const list = await http.get('/outbox', { key: project.secretKey });
        expect(list.body.data).toHaveLength(1);
        return list.body.data[0];
      }, 60_000);
      expect(captured).toMatchObject({ to: ['reader@example.com'], subject: 'From dist' });
      const raw = await http.get(`/outbox/${captured.id}/raw`, { key: project.secretKey });
      expect(raw.text).toMatch(/Hello pro/);
    } finally {
      api?.kill('SIGTERM');
      worker.kill('SIGTERM');
      await Promise.all([api?.exited, worker.exited]);
      await dropTestDatabase(databaseUrl);
    }
  });
});
