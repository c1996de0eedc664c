import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStackWorker, startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { insertWorkflow } from '../workflows/workflowDefinitionRows';
import { ConfigError, loadConfig } from '../../lib/config';
import { hourlyCleanupWorkflow } from '../../workflows';
import { hourlyCleanupScheduleId } from '../../worker/schedules';
import { removeAbandonedWorkflowBundles } from '../../worker/workflowBundle';

/**
 * Retention (issue 22, item 4): the hourly cleanup removes what served its purpose and keeps the
 * rest, with real PostgreSQL and Temporal; temporary files crashed processes left go at start.
 */
jest.setTimeout(180_000);

const HOUR = 3600_000;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-data-'));
const uploads = path.join(dataDir, 'uploads', 'project-a');
const abandoned = path.join(uploads, '.logo.png.0123456789ab.tmp');
const inProgress = path.join(uploads, '.banner.png.ba9876543210.tmp');
const stored = path.join(uploads, 'logo.png');

let stack: TestStack;
let account: TestAccount;
let project: TestProject;

beforeAll(async () => {
  // What a crashed API left in the uploads store: a temporary file two hours old, one being
  // written right now by another process, and an object stored long ago.
  fs.mkdirSync(uploads, { recursive: true });
  for (const file of [abandoned, inProgress, stored]) fs.writeFileSync(file, 'bytes');
  const twoHoursAgo = new Date(Date.now() - 2 * HOUR);
  fs.utimesSync(abandoned, twoHoursAgo, twoHoursAgo);
  fs.utimesSync(stored, twoHoursAgo, twoHoursAgo);
  stack = await startTestStack({ env: { DATA_DIR: dataDir, EXECUTION_STEPS_KEPT: '50', IMPORT_FILE_RETENTION_DAYS: '7', TEMP_FILE_MAX_AGE_HOURS: '1' } });
  // The hourly run is not to act in the middle of a test: each test runs the workflow itself.
  await stack.temporal.schedule.getHandle(hourlyCleanupScheduleId(stack.config.temporalTaskQueue)).pause('retention test runs the cleanup itself');
  ({ account, project } = await accountWithProject(stack.http));
  // The signup's verification token is issued by a workflow: present before anything is counted.
  await eventually(async () => {
    const [row] = await sql(`select count(*)::int as n from user_tokens where user_id = ?`, [account.userId]);
    if (row.n !== 1) throw new Error('verification token not issued yet');
  });
});

afterAll(async () => {
  await stack?.stop();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

async function runCleanup() {
  return stack.temporal.workflow.execute(hourlyCleanupWorkflow, {
    workflowId: `retention-test-${crypto.randomBytes(4).toString('hex')}`,
    taskQueue: stack.config.temporalTaskQueue,
  });
}

describe('settings', () => {
  const env = (vars: Record<string, string>) => loadConfig({ DATA_DIR: dataDir, SECRET: 'a-test-secret-of-length', ...vars });

  it('has documented defaults', () => {
    expect(env({}).retention).toEqual({ importFileDays: 7, inboundDays: 30, executionStepsKept: 100, tempFileMaxAgeHours: 1, requestLogDays: 7 });
    expect(
      env({
        IMPORT_FILE_RETENTION_DAYS: '0',
        INBOUND_RETENTION_DAYS: '90',
        EXECUTION_STEPS_KEPT: '500',
        TEMP_FILE_MAX_AGE_HOURS: '24',
        REQUEST_LOG_RETENTION_DAYS: '30',
      }).retention,
    ).toEqual({
      importFileDays: 0,
      inboundDays: 90,
      executionStepsKept: 500,
      tempFileMaxAgeHours: 24,
      requestLogDays: 30,
    });
  });

  it.each([
    ['IMPORT_FILE_RETENTION_DAYS', '-1', 'IMPORT_FILE_RETENTION_DAYS: must be at least 0 days'],
    ['IMPORT_FILE_RETENTION_DAYS', 'a week', 'IMPORT_FILE_RETENTION_DAYS: must be a whole number of days'],
    ['IMPORT_FILE_RETENTION_DAYS', '1.5', 'IMPORT_FILE_RETENTION_DAYS: must be a whole number of days'],
    ['INBOUND_RETENTION_DAYS', '0', 'INBOUND_RETENTION_DAYS: must be at least 1 days'],
    ['EXECUTION_STEPS_KEPT', '10', 'EXECUTION_STEPS_KEPT: must be at least 50 steps'],
    ['EXECUTION_STEPS_KEPT', 'all', 'EXECUTION_STEPS_KEPT: must be a whole number of steps'],
    ['TEMP_FILE_MAX_AGE_HOURS', '0', 'TEMP_FILE_MAX_AGE_HOURS: must be at least 1 hours'],
    ['TEMP_FILE_MAX_AGE_HOURS', '-3', 'TEMP_FILE_MAX_AGE_HOURS: must be at least 1 hours'],
    ['REQUEST_LOG_RETENTION_DAYS', '0', 'REQUEST_LOG_RETENTION_DAYS: must be at least 1 days'],
    ['REQUEST_LOG_RETENTION_DAYS', 'forever', 'REQUEST_LOG_RETENTION_DAYS: must be a whole number of days'],
  ])('refuses %s=%s', (name, value, message) => {
    expect(() => env({ [name]: value })).toThrow(ConfigError);
    expect(() => env({ [name]: value })).toThrow(message);
  });

  it('stops a worker process at start with the message', async () => {
    const worker = await startStackWorker(stack, { EXECUTION_STEPS_KEPT: '-5' }, 30_000).then(
      () => null,
      (err: Error) => err,
    );
    expect(worker?.message).toContain('EXECUTION_STEPS_KEPT: must be at least 50 steps');
  });
});

describe('temporary files at start', () => {
  it('removes an upload temporary file older than TEMP_FILE_MAX_AGE_HOURS, keeps a younger one and stored objects', async () => {
    const line = await eventually(() => stack.logs.find((l) => l.event === 'retention.temporary_files' && l.store === 'local'));
    expect(line).toMatchObject({ removed: 1 });
    expect([fs.existsSync(abandoned), fs.existsSync(inProgress), fs.existsSync(stored)]).toEqual([false, true, true]);
  });

  it("removes workflow bundles of workers that died while starting, not a younger one's or anything else", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-bundles-'));
    const names = ['mailroom-workflows-123-0a1b2c3d.js', 'mailroom-workflows-456-deadbeef.js', 'mailroom-workflows-notes.js', 'other.js'];
    for (const name of names) fs.writeFileSync(path.join(dir, name), '');
    const old = new Date(Date.now() - 3 * HOUR);
    for (const name of [names[0], names[2], names[3]]) fs.utimesSync(path.join(dir, name), old, old);
    expect(removeAbandonedWorkflowBundles(HOUR, dir)).toBe(1);
    expect(fs.readdirSync(dir).sort()).toEqual([names[1], names[2], names[3]].sort());
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('the hourly cleanup', () => {
  /** Rows of every kind, old and fresh, each marked by what the test expects of it. */
  async function seed() {
    const [user] = await sql(`insert into users (email, password_hash) values (?, 'x') returning id`, [
      `kept-${crypto.randomBytes(3).toString('hex')}@example.com`,
    ]);
    await sql(
      `insert into sessions (user_id, created_at, expires_at) values
         (?, now() - interval '40 days', now() - interval '10 days'),
         (?, now() - interval '31 days', now() - interval '1 minute'),
         (?, now(), now() + interval '30 days')`,
      [user.id, user.id, user.id],
    );
    const token = () => crypto.randomBytes(16).toString('hex');
    await sql(
      `insert into user_tokens (user_id, purpose, token_hash, created_at, expires_at, used_at) values
         (?, 'RESET_PASSWORD', ?, now() - interval '2 days', now() - interval '47 hours', now() - interval '47 hours 30 minutes'),
         (?, 'VERIFY_EMAIL', ?, now() - interval '3 days', now() - interval '2 days', null),
         (?, 'RESET_PASSWORD', ?, now() - interval '10 minutes', now() + interval '50 minutes', now() - interval '5 minutes'),
         (?, 'RESET_PASSWORD', ?, now() - interval '2 hours', now() - interval '1 hour', null),
         (?, 'VERIFY_EMAIL', ?, now() - interval '1 hour', now() + interval '23 hours', null)`,
      [user.id, token(), user.id, token(), user.id, token(), user.id, token(), user.id, token()],
    );
    await sql(
      `insert into idempotency_keys (project_id, key, request, status_code, created_at, expires_at) values
         (?, 'expired', 'POST /v1/send', 200, now() - interval '25 hours', now() - interval '1 hour'),
         (?, 'fresh', 'POST /v1/send', 200, now() - interval '23 hours', now() + interval '1 hour')`,
      [project.id, project.id],
    );
    // Imports: the CSV goes 7 days after the import ended, an unclaimed upload after an hour;
    // the jobs themselves stay.
    const importJob = async (status: string, endedDaysAgo: number | null, chunks: number) => {
      const [job] = await sql(
        `insert into jobs (project_id, type, status, created_at, completed_at)
         values (?, 'IMPORT', ?, now() - interval '40 days', case when ?::int is null then null else now() - make_interval(days => ?::int) end) returning id`,
        [project.id, status, endedDaysAgo, endedDaysAgo],
      );
      await upload(job.id, '40 days', chunks);
    };
    const upload = async (jobId: string | null, age: string, chunks: number) => {
      const [row] = await sql(`insert into job_uploads (project_id, job_id, filename, created_at) values (?, ?, 'a.csv', now() - ?::interval) returning id`, [
        project.id,
        jobId,
        age,
      ]);
      await sql(`insert into job_upload_chunks (upload_id, seq, bytes) select ?, g, decode(repeat('ab', 1024), 'hex') from generate_series(0, ?) g`, [
        row.id,
        chunks - 1,
      ]);
    };
    await importJob('COMPLETED', 8, 3);
    await importJob('FAILED', 30, 2);
    await importJob('CANCELLED', 8, 1);
    await importJob('COMPLETED', 6, 2);
    await importJob('RUNNING', null, 4);
    await upload(null, '2 hours', 2);
    await upload(null, '5 minutes', 1);

    // Executions: step history beyond the newest 50 goes, ended or waiting; a short one is untouched.
    const automation = await insertWorkflow(stack, project.id, { eventName: 'never-sent', enabled: false, steps: [], transitions: [] });
    const [contact] = await sql(`insert into contacts (project_id, email) values (?, ?) returning id`, [
      project.id,
      `x-${crypto.randomBytes(3).toString('hex')}@example.org`,
    ]);
    const execution = async (status: string, steps: number) => {
      const [row] = await sql(
        `insert into workflow_executions (project_id, workflow_id, contact_id, status, current_step_id, exit_reason, completed_at)
         values (?, ?, ?, ?, ?, ?, case when ? in ('RUNNING', 'WAITING') then null else now() end) returning id`,
        [project.id, automation.id, contact.id, status, automation.steps.trigger, status === 'EXITED' ? 'Looped long enough' : null, status],
      );
      await sql(
        `insert into workflow_execution_steps (execution_id, sequence, step_id, step_type, status, output, started_at, completed_at)
         select ?, g, ?, 'DELAY', case when g = ? and ? = 'WAITING' then 'WAITING' else 'COMPLETED' end, jsonb_build_object('n', g),
                now() - make_interval(secs => ? - g), now() - make_interval(secs => ? - g)
         from generate_series(0, ?) g`,
        [row.id, automation.steps.trigger, steps - 1, status, steps, steps, steps - 1],
      );
      return row.id as string;
    };
    return {
      automationId: automation.id,
      ended: await execution('EXITED', 130),
      waiting: await execution('WAITING', 120),
      short: await execution('COMPLETED', 30),
    };
  }

  /** Row counts of what the retention touches (steps: of the seeded executions, by execution). */
  async function sizes(executions: { ended: string; waiting: string; short: string }) {
    const [row] = await sql(
      `select (select count(*)::int from sessions) as sessions,
              (select count(*)::int from user_tokens) as user_tokens,
              (select count(*)::int from idempotency_keys) as idempotency_keys,
              (select count(*)::int from jobs) as jobs,
              (select count(*)::int from job_uploads) as job_uploads,
              (select count(*)::int from job_upload_chunks) as job_upload_chunks,
              (select count(*)::int from workflow_executions where id in (?, ?, ?)) as executions,
              (select count(*)::int from workflow_execution_steps where execution_id = ?) as steps_ended,
              (select count(*)::int from workflow_execution_steps where execution_id = ?) as steps_waiting,
              (select count(*)::int from workflow_execution_steps where execution_id = ?) as steps_short`,
      [executions.ended, executions.waiting, executions.short, executions.ended, executions.waiting, executions.short],
    );
    return row;
  }

  it('removes what served its purpose, keeps the rest, and reports what it removed', async () => {
    const executions = await seed();
    // The signup's session and token are fresh, like one of each seeded.
    expect(await sizes(executions)).toEqual({
      sessions: 4,
      user_tokens: 6,
      idempotency_keys: 2,
      jobs: 5,
      job_uploads: 7,
      job_upload_chunks: 15,
      executions: 3,
      steps_ended: 130,
      steps_waiting: 120,
      steps_short: 30,
    });

    const result = await runCleanup();

    expect(await sizes(executions)).toEqual({
      sessions: 2,
      user_tokens: 4,
      idempotency_keys: 1,
      jobs: 5,
      job_uploads: 3,
      job_upload_chunks: 7,
      executions: 3,
      steps_ended: 50,
      steps_waiting: 50,
      steps_short: 30,
    });
    expect(result.retention).toEqual({
      importFiles: 4,
      sessions: 2,
      accountTokens: 2,
      idempotencyKeys: 1,
      executionSteps: 150,
      inboundContent: 0,
      requestLog: 0,
      webhookMessages: 0,
    });
    expect(result.unfinished).toEqual([]);
    expect(stack.logs.filter((l) => l.event === 'retention.applied').map((l) => l.kind)).toEqual(
      expect.arrayContaining(['importFiles', 'sessions', 'accountTokens', 'idempotencyKeys', 'executionSteps']),
    );

    // What stays of each: the kept uploads (the recent import, the running one, the fresh unclaimed one)...
    const keptUploads = await sql(
      `select j.status, count(c.seq)::int as chunks from job_uploads u left join jobs j on j.id = u.job_id join job_upload_chunks c on c.upload_id = u.id
       group by u.id, j.status order by j.status nulls last`,
    );
    expect(keptUploads).toEqual([
      { status: 'COMPLETED', chunks: 2 },
      { status: 'RUNNING', chunks: 4 },
      { status: null, chunks: 1 },
    ]);
    // ...the newest 50 steps of each long execution, the waiting step among them, and the summary.
    const span = async (id: string) =>
      (await sql(`select min(sequence)::int as first, max(sequence)::int as last from workflow_execution_steps where execution_id = ?`, [id]))[0];
    expect(await span(executions.ended)).toEqual({ first: 80, last: 129 });
    expect(await span(executions.waiting)).toEqual({ first: 70, last: 119 });
    expect((await sql(`select status from workflow_execution_steps where execution_id = ? and sequence = 119`, [executions.waiting]))[0].status).toBe(
      'WAITING',
    );
    const shown = await stack.http.get(`/workflows/${executions.automationId}/executions/${executions.ended}`, { key: project.secretKey });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ status: 'EXITED', exitReason: 'Looped long enough' });
    expect(shown.body.steps.map((s: { sequence: number }) => s.sequence)).toEqual(Array.from({ length: 50 }, (_, i) => 80 + i));

    // A second run finds nothing left to remove.
    expect((await runCleanup()).retention).toEqual({
      importFiles: 0,
      sessions: 0,
      accountTokens: 0,
      idempotencyKeys: 0,
      executionSteps: 0,
      inboundContent: 0,
      requestLog: 0,
      webhookMessages: 0,
    });
  });

  it('bounds the history of an execution that loops for ever, which goes on walking', async () => {
    // trigger → pause → check1 … check8 → pause → …: a short DELAY and eight CONDITIONs (run in
    // one activity) in a loop, so the history grows by nine rows per round.
    const checks = Array.from({ length: 8 }, (_, i) => `check${i + 1}`);
    const loop = await insertWorkflow(stack, project.id, {
      eventName: 'loop',
      steps: [
        { key: 'pause', type: 'DELAY', config: { amount: 0.001, unit: 'minutes' } },
        ...checks.map((key) => ({ key, type: 'CONDITION' as const, config: { field: 'event.go', operator: 'equals', value: true } })),
      ],
      transitions: [
        { from: 'trigger', to: 'pause' },
        { from: 'pause', to: checks[0] },
        ...checks.flatMap((from, i) => (['yes', 'no'] as const).map((branch) => ({ from, to: checks[i + 1] ?? 'pause', branch }))),
      ],
    });
    expect((await stack.http.post('/v1/track', { email: 'looper@example.org', event: 'loop' }, { key: project.publicKey })).status).toBe(200);
    const executionId = await eventually(async () => {
      const [row] = await sql(`select id from workflow_executions where workflow_id = ?`, [loop.id]);
      if (!row) throw new Error('no execution yet');
      return row.id as string;
    });
    const span = async () =>
      (
        await sql(
          `select min(sequence)::int as first, max(sequence)::int as last, count(*)::int as rows from workflow_execution_steps where execution_id = ?`,
          [executionId],
        )
      )[0] as { first: number; last: number; rows: number };
    try {
      const before = await eventually(async () => {
        const now = await span();
        if (now.last < 90) throw new Error(`only ${now.last + 1} steps so far`);
        return now;
      }, 150_000);
      expect(before.first).toBe(0);

      await runCleanup();

      // Everything up to 50 steps before the newest it saw is gone, and nothing in between.
      const after = await span();
      expect(after.first).toBeGreaterThan(before.last - 50);
      expect(after.rows).toBe(after.last - after.first + 1);
      // The walk goes on from where it was, numbering on.
      const later = await eventually(async () => {
        const now = await span();
        if (now.last < after.last + 10) throw new Error('not walking on');
        return now;
      }, 60_000);
      expect(later.first).toBe(after.first);
      const shown = await stack.http.get(`/workflows/${loop.id}/executions/${executionId}`, { key: project.secretKey });
      expect(shown.status).toBe(200);
      expect(['RUNNING', 'WAITING']).toContain(shown.body.status);
      expect(shown.body.steps[0].sequence).toBe(after.first);
    } finally {
      const cancelled = await stack.http.delete(`/workflows/${loop.id}/executions/${executionId}`, { key: project.secretKey });
      expect(cancelled.status).toBe(200);
    }
  });
});
