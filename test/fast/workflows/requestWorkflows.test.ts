import crypto from 'node:crypto';
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { AccountEmailActivities } from '../../../activities/accountEmailActivities';
import type { ContactJobActivities } from '../../../activities/contactJobActivities';
import { eventually } from '../../support/eventually';
import { startFastTemporal, type FastTemporal } from '../support/temporalEnvironment';

/**
 * The workflows the API starts for a request: an account mail (verification, password reset)
 * and the contact jobs (a CSV import on its own task queue, a bulk change), which always leave
 * their job in a terminal state.
 */
type Activities = AccountEmailActivities & ContactJobActivities;

let temporal: FastTemporal<Activities>;
beforeAll(async () => {
  temporal = await startFastTemporal<Activities>({
    activities: ['issueAccountEmailToken', 'sendAccountEmail', 'markJobRunning', 'finishJob', 'importContactsBatches', 'runBulkContactJob'],
    imports: true,
  });
});
afterAll(async () => {
  await temporal?.teardown();
});

const start = (type: string, args: unknown[], workflowId = `${type}-${crypto.randomUUID()}`) =>
  temporal.client.workflow.start(type, { taskQueue: temporal.taskQueue, workflowId, args });

describe('account mail', () => {
  const request = { requestId: crypto.randomUUID(), email: 'owner@example.org', purpose: 'VERIFY_EMAIL' as const };

  function mailStandIns(issued: Awaited<ReturnType<AccountEmailActivities['issueAccountEmailToken']>>) {
    const mailed: string[] = [];
    temporal.standIns({
      async issueAccountEmailToken() {
        return issued;
      },
      async sendAccountEmail(tokenId) {
        mailed.push(tokenId);
        return { sent: true };
      },
    });
    return mailed;
  }

  it('accountEmailRequestWorkflow mails the token it issued', async () => {
    const mailed = mailStandIns({ issued: true, tokenId: 't1' });
    await expect((await start('accountEmailRequestWorkflow', [request])).result()).resolves.toEqual({ issued: true, tokenId: 't1' });
    expect(mailed).toEqual(['t1']);
  });

  it('accountEmailRequestWorkflow mails nothing when no token was issued (no such account, say)', async () => {
    const mailed = mailStandIns({ issued: false, reason: 'NO_ACCOUNT' });
    await expect((await start('accountEmailRequestWorkflow', [request])).result()).resolves.toEqual({ issued: false, reason: 'NO_ACCOUNT' });
    expect(mailed).toEqual([]);
  });

  it('accountEmailWorkflow (runs an older API started) mails the token it was given', async () => {
    const mailed = mailStandIns({ issued: false, reason: 'NO_ACCOUNT' });
    await expect((await start('accountEmailWorkflow', [{ tokenId: 't2' }])).result()).resolves.toBeUndefined();
    expect(mailed).toEqual(['t2']);
  });
});

describe('contact jobs', () => {
  function jobStandIns(work: (jobId: string) => Promise<void> = async () => undefined) {
    const calls = { running: [] as string[], finished: [] as unknown[][], imported: [] as string[], bulk: [] as string[] };
    temporal.standIns({
      async markJobRunning(jobId) {
        calls.running.push(jobId);
      },
      async finishJob(...args) {
        calls.finished.push(args);
      },
      async importContactsBatches(jobId) {
        calls.imported.push(jobId);
        await work(jobId);
        return { processed: 10 };
      },
      async runBulkContactJob(jobId) {
        calls.bulk.push(jobId);
        await work(jobId);
        return { succeeded: 3, failed: 0 };
      },
    });
    return calls;
  }

  it('importContactsWorkflow imports on the import task queue (whose activity marks the job RUNNING) and completes the job', async () => {
    const calls = jobStandIns();
    const handle = await start('importContactsWorkflow', [{ jobId: 'j1' }]);
    await expect(handle.result()).resolves.toBeUndefined();
    expect(calls).toMatchObject({ running: [], imported: ['j1'], finished: [['j1', 'COMPLETED']] });
    const history = (await handle.fetchHistory()).events ?? [];
    const scheduled = history.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'importContactsBatches');
    expect(scheduled?.activityTaskScheduledEventAttributes?.taskQueue?.name).toBe(temporal.importQueue);
  });

  it('importContactsWorkflow marks the job FAILED with the reason when the import fails for good, and fails', async () => {
    const calls = jobStandIns(async () => {
      throw ApplicationFailure.nonRetryable('row 3: not an email address');
    });
    const handle = await start('importContactsWorkflow', [{ jobId: 'j2' }]);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(calls.finished).toEqual([['j2', 'FAILED', 'row 3: not an email address']]);
  });

  it('importContactsWorkflow marks the job CANCELLED when cancelled through Temporal mid-import', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls = jobStandIns(() => gate);
    const handle = await start('importContactsWorkflow', [{ jobId: 'j3' }]);
    await eventually(() => expect(calls.imported).toEqual(['j3']), 10_000, 20);
    await handle.cancel();
    const failure = await handle.result().catch((err: unknown) => err);
    release();
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(calls.finished).toEqual([['j3', 'CANCELLED', undefined]]);
  });

  it('bulkContactsWorkflow marks the job RUNNING, runs it and completes it', async () => {
    const calls = jobStandIns();
    await expect((await start('bulkContactsWorkflow', [{ jobId: 'j4' }])).result()).resolves.toBeUndefined();
    expect(calls).toMatchObject({ running: ['j4'], bulk: ['j4'], finished: [['j4', 'COMPLETED']] });
  });
});
