import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';

/**
 * IMPORT_CONCURRENCY bounds the imports one worker runs at once; the others wait, QUEUED, for a
 * free slot. A job is RUNNING exactly while its import holds a slot, so with one slot no two jobs
 * are ever RUNNING at the same time: their RUNNING periods (startedAt to completedAt) are disjoint.
 */
describe('imports per worker', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { IMPORT_CONCURRENCY: '1' } });
  });
  afterAll(() => stack.stop());

  it('runs one import at a time with IMPORT_CONCURRENCY=1, the others QUEUED until then', async () => {
    const { project } = await accountWithProject(stack.http);
    const key = project.secretKey;
    const files = [0, 1, 2].map((f) => {
      const lines = ['email,n'];
      for (let i = 0; i < 4000; i++) lines.push(`slot${f}-${i}@example.com,${i}`);
      return lines.join('\n');
    });
    const uploads = await Promise.all(files.map((content, f) => uploadFile(stack.http.baseUrl, '/contacts/import', key, { name: `f${f}.csv`, content })));
    expect(uploads.map((u) => u.status)).toEqual([202, 202, 202]);
    const ids: string[] = uploads.map((u) => u.body.jobId);

    // Snapshots of all three jobs at once (one statement), while they run.
    const snapshots: string[][] = [];
    const jobs = await eventually(
      async () => {
        const rows = await stack.orm.em.fork().execute<Array<{ status: string }>>(`select status from jobs where id in (?, ?, ?)`, ids);
        const statuses = rows.map((r) => r.status);
        snapshots.push(statuses);
        if (statuses.some((status) => status !== 'COMPLETED')) throw new Error(statuses.join());
        return Promise.all(ids.map(async (id) => (await stack.http.get(`/contacts/import/${id}`, { key })).body));
      },
      120_000,
      20,
    );
    for (const job of jobs) expect(job).toMatchObject({ status: 'COMPLETED', succeeded: 4000 });
    expect(snapshots.every((s) => s.filter((status) => status === 'RUNNING').length <= 1)).toBe(true);
    expect(snapshots.some((s) => s.includes('RUNNING') && s.includes('QUEUED'))).toBe(true);

    const periods = jobs.map((j) => [Date.parse(j.startedAt), Date.parse(j.completedAt)]).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < periods.length; i++) expect(periods[i][0]).toBeGreaterThanOrEqual(periods[i - 1][1]);
  }, 180_000);
});
