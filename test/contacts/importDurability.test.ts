import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { spawnService, type ChildService } from '../support/processes';
import { eventually } from '../support/eventually';
import { importContactsWorkflow } from '../../workflows';

/**
 * The import runs in a real worker process that is killed (SIGKILL, no chance to clean up) in
 * the middle of the import; a second worker picks the job up where the job record says it
 * stopped. Every row must end up imported exactly once.
 */
/** A worker process starts in seconds; on a loaded CI machine (tsx compiling, bundling) it can take far longer. */
const WORKER_START_MS = 120_000;

describe('a worker killed mid-import', () => {
  let stack: TestStack;
  const workers: ChildService[] = [];
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await stack.stop();
  });

  const workerEnv = () => ({
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.config.temporalAddress!,
    TEMPORAL_TASK_QUEUE: stack.config.temporalTaskQueue,
    DATA_DIR: stack.config.dataDir,
    SECRET: stack.config.secret,
    LOG_LEVEL: 'info',
  });

  it('resumes without losing or duplicating a row', async () => {
    const { project } = await accountWithProject(stack.http);
    const rows = 40_000;
    const lines = ['email,n,plan'];
    for (let i = 0; i < rows; i++) lines.push(`person${i}@example.com,${i},${i % 3 ? 'free' : 'pro'}`);

    const first = spawnService('worker/main.ts', workerEnv());
    workers.push(first);
    await first.waitForLine((l) => l.msg === 'worker started', WORKER_START_MS);

    const upload = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: 'big.csv', content: lines.join('\n') });
    expect(upload.status).toBe(202);
    const jobPath = `/contacts/import/${upload.body.jobId}`;

    // Kill the worker once some batches are committed and most are not.
    const atKill = await eventually(
      async () => {
        const job = (await stack.http.get(jobPath, { key: project.secretKey })).body;
        if (job.processed < 1000) throw new Error(`processed ${job.processed}`);
        return job;
      },
      60_000,
      20,
    );
    first.kill('SIGKILL');
    await first.exited;
    expect(atKill.processed).toBeLessThan(rows);

    const second = spawnService('worker/main.ts', workerEnv());
    workers.push(second);
    const done = await eventually(
      async () => {
        const job = (await stack.http.get(jobPath, { key: project.secretKey })).body;
        if (job.status !== 'COMPLETED') throw new Error(`${job.status} ${job.processed}`);
        return job;
      },
      90_000,
      200,
    );
    expect(done).toMatchObject({ total: rows, processed: rows, succeeded: rows, failed: 0, errors: [] });
    const [{ n, distinct_n }] = await stack.orm.em
      .fork()
      .execute(`select count(*)::int as n, count(distinct (data->>'n'))::int as distinct_n from contacts where project_id = ?`, [project.id]);
    expect(n).toBe(rows);
    expect(distinct_n).toBe(rows);
  }, 300_000);

  it('logs one line per failed activity attempt and one per failed workflow run', async () => {
    const worker = workers[workers.length - 1];
    const { project } = await accountWithProject(stack.http);
    // A job whose upload is missing: the activity fails for good, and so does the run.
    const [row] = await stack.orm.em.fork().execute(`insert into jobs (project_id, type, total) values (?, 'IMPORT', 1) returning id`, [project.id]);
    await stack.temporal.workflow.start(importContactsWorkflow, {
      workflowId: `import-${row.id}`,
      taskQueue: stack.config.temporalTaskQueue,
      args: [{ jobId: row.id }],
    });
    const upload = { body: { jobId: row.id as string } };
    const job = await eventually(async () => {
      const res = (await stack.http.get(`/contacts/import/${upload.body.jobId}`, { key: project.secretKey })).body;
      if (res.status !== 'FAILED') throw new Error(res.status);
      return res;
    }, 60_000);
    expect(job.error).toMatch(/upload .* is missing/);
    const workflowId = `import-${upload.body.jobId}`;
    await worker.waitForLine((l) => l.event === 'activity.failed' && l.workflowId === workflowId && l.activityType === 'importContactsBatches');
    await worker.waitForLine((l) => l.event === 'workflow.failed' && l.workflowId === workflowId);
  }, 120_000);

  it('lets a worker told to stop (SIGTERM) finish the import it is running, then exit cleanly', async () => {
    // Only the worker under test may poll the task queue.
    for (const earlier of workers.splice(0)) {
      earlier.kill('SIGTERM');
      await earlier.exited;
    }
    const { project } = await accountWithProject(stack.http);
    const rows = 20_000;
    const lines = ['email,n'];
    for (let i = 0; i < rows; i++) lines.push(`graceful${i}@example.com,${i}`);
    const worker = spawnService('worker/main.ts', workerEnv());
    workers.push(worker);
    await worker.waitForLine((l) => l.msg === 'worker started', WORKER_START_MS);
    const upload = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: 'graceful.csv', content: lines.join('\n') });
    const jobPath = `/contacts/import/${upload.body.jobId}`;
    await eventually(
      async () => {
        const job = (await stack.http.get(jobPath, { key: project.secretKey })).body;
        if (job.processed < 1000) throw new Error(`processed ${job.processed}`);
      },
      60_000,
      20,
    );

    worker.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    // The running activity was allowed to finish: every row is in, before any other worker ran.
    const afterStop = (await stack.http.get(jobPath, { key: project.secretKey })).body;
    expect(afterStop.processed).toBe(rows);
    expect(afterStop.succeeded).toBe(rows);

    // The workflow's last step (marking the job done) waits for the next worker.
    const next = spawnService('worker/main.ts', workerEnv());
    workers.push(next);
    await eventually(async () => {
      const job = (await stack.http.get(jobPath, { key: project.secretKey })).body;
      if (job.status !== 'COMPLETED') throw new Error(job.status);
    }, 60_000);
  }, 300_000);
});
