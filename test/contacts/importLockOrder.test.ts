import { startTestStack, startStackWorker, type TestStack } from '../support/testStack';
import type { ChildService } from '../support/processes';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';
import { workflowsClosed } from '../support/temporalRuns';

const WORKER_APP_NAME = 'mailroom-import-lock-order';

async function deadlocksSoFar(stack: TestStack): Promise<number> {
  const rows = await stack.orm.em
    .fork()
    .execute<Array<{ deadlocks: string }>>(`select deadlocks::text from pg_stat_database where datname = current_database()`);
  return Number(rows[0].deadlocks);
}

/**
 * Issue 22 item 5: imports sharing addresses take their row locks in one order (the conflict
 * key's), so concurrent imports of the same addresses in different orders wait for each other
 * instead of deadlocking (PostgreSQL would abort one, and only Temporal's retry would hide it).
 */
describe('concurrent imports of the same addresses in different orders', () => {
  let stack: TestStack;
  let worker: ChildService | undefined;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { IMPORT_CONCURRENCY: '3' } });
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    await stack.stop();
  });

  it('never deadlock, and no import activity needs a second attempt', async () => {
    // The imports run in a worker process of their own: its database sessions end when it stops,
    // and a session that ends has reported its statistics (deadlocks included) to the server.
    worker = await startStackWorker(stack, { IMPORT_CONCURRENCY: '3', PGAPPNAME: WORKER_APP_NAME }, 60_000);
    const { project } = await accountWithProject(stack.http);
    const emails = Array.from({ length: 3000 }, (_, i) => `shared${String(i).padStart(4, '0')}@example.com`);
    // Ascending, descending, and interleaved from the middle: every pair of files meets the same
    // rows in opposite orders within one 1,000-row batch.
    const middle = emails.length / 2;
    const orders = [
      emails,
      [...emails].reverse(),
      emails.map((_, i) => emails[(middle + (i % 2 ? -1 : 1) * Math.ceil(i / 2) + emails.length) % emails.length]),
    ];
    const before = await deadlocksSoFar(stack);

    const uploads = await Promise.all(
      orders.map((order, f) =>
        uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, {
          name: `order${f}.csv`,
          content: ['email,file', ...order.map((email) => `${email},${f}`)].join('\n'),
        }),
      ),
    );
    expect(uploads.map((u) => u.status)).toEqual([202, 202, 202]);
    const jobIds: string[] = uploads.map((u) => u.body.jobId);
    await workflowsClosed(
      stack.temporal,
      jobIds.map((id) => `import-${id}`),
    );
    for (const id of jobIds) {
      expect((await stack.http.get(`/contacts/import/${id}`, { key: project.secretKey })).body).toMatchObject({
        status: 'COMPLETED',
        succeeded: 3000,
        failed: 0,
      });
    }
    // The imports overlapped: otherwise they could not have met in a lock.
    const periods = await Promise.all(jobIds.map(async (id) => (await stack.http.get(`/contacts/import/${id}`, { key: project.secretKey })).body));
    const spans = periods.map((j) => [Date.parse(j.startedAt), Date.parse(j.completedAt)]);
    expect(spans.some(([start], i) => spans.some(([otherStart, otherEnd], j) => i !== j && start >= otherStart && start < otherEnd))).toBe(true);

    // Every import activity ran once: a deadlock fails the attempt and Temporal retries it.
    for (const id of jobIds) {
      const history = await stack.temporal.workflow.getHandle(`import-${id}`).fetchHistory();
      const events = history.events ?? [];
      const attempts = events.filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
      expect(attempts.length).toBeGreaterThan(0);
      expect(attempts.every((attempt) => attempt === 1)).toBe(true);
      expect(events.filter((e) => e.activityTaskFailedEventAttributes)).toEqual([]);
    }

    // The deadlock counter of the test database: read once the worker's sessions have ended.
    const sessionsOfWorker = async () =>
      (
        await stack.orm.em.fork().execute<Array<{ n: number }>>(`select count(*)::int as n from pg_stat_activity where application_name = ?`, [WORKER_APP_NAME])
      )[0].n;
    expect(await sessionsOfWorker()).toBeGreaterThan(0);
    worker.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    await eventually(async () => (await sessionsOfWorker()) === 0, 30_000);
    expect(await deadlocksSoFar(stack)).toBe(before);
    expect(worker.lines.filter((l) => /deadlock/i.test(JSON.stringify(l)))).toEqual([]);
  }, 240_000);
});
