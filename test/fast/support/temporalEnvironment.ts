/**
 * A Temporal server for one fast test file: `TestWorkflowEnvironment.createLocal()` on the Temporal
 * CLI that scripts/temporal-binary.cjs built (no download), with Mailroom's search attributes, and
 * a worker for the file that runs the real workflow bundle against the activity stand-ins the
 * running test gives.
 *
 * Works under both configs: jest.fast.config.js (its setup builds the bundle, instrumented under
 * --coverage) and jest.config.js (`npm test`: the bundle its setup built for every test file).
 * Alone, it bundles the workflows itself.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { inspect } from 'node:util';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, bundleWorkflowCode, type WorkerOptions } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowCoverage } from '@temporalio/nyc-test-coverage';
import type { Client } from '@temporalio/client';
import { mailroomSearchAttributes } from '../../../temporal/searchAttributes';
import { deliveryTaskQueue, importTaskQueue } from '../../../temporal/taskQueues';
import { FAST_BUNDLE_ENV, FAST_COVERAGE_ENV, workflowBundleOptions } from './fastGlobalSetup';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalBinary } = require('../../../scripts/temporal-binary.cjs');

/** Activity functions by name (the shape of activities/*'s `XActivities` types). */
type ActivityMap = Record<string, (...args: any[]) => Promise<unknown>>;

export interface TestQueues {
  /** The workflows' task queue (also their activities'). */
  taskQueue: string;
  /** Where delivery workflows go (campaign and execution retries, the delivery sweep's starts): no worker polls it, a test looks at them. */
  deliveryQueue: string;
  /** Where an import's activity goes. */
  importQueue: string;
}

export interface FastTemporalOptions<A> {
  /** The activities the file's workflows call: each goes to the stand-in the running test gave (standIns). */
  activities: Array<keyof A & string>;
  /** Also run the activities on the import task queue (an import's work goes there). */
  imports?: boolean;
}

export interface FastTemporal<A> extends TestQueues {
  env: TestWorkflowEnvironment;
  client: Client;
  /** The activity stand-ins for the test that runs now (tests in a file run one after the other). */
  standIns(activities: Partial<A>): void;
  teardown(): Promise<void>;
}

const WORKFLOWS_DIR = path.dirname(require.resolve('../../../workflows')) + path.sep;

/** The workflow code: the fast setup's bundle, else the whole suite's, else one bundled now. */
async function workflowBundle(): Promise<{ option: { codePath: string } | { code: string }; instrumented: boolean }> {
  const fast = process.env[FAST_BUNDLE_ENV];
  if (fast) return { option: { codePath: fast }, instrumented: process.env[FAST_COVERAGE_ENV] === '1' };
  // Under `npm test`: the bundle test/support/globalSetup.ts built for every file.
  const shared = process.env.MAILROOM_WORKFLOW_BUNDLE;
  if (shared) return { option: { codePath: shared }, instrumented: false };
  return { option: { code: (await bundleWorkflowCode(workflowBundleOptions())).code }, instrumented: false };
}

/**
 * Starts the server and the file's worker (for the whole file: a worker takes about a second to
 * start, a workflow then tens of milliseconds). An activity without a stand-in
 * fails at once, not retried, so a test missing one fails instead of waiting.
 */
export async function startFastTemporal<A extends object>(options: FastTemporalOptions<A>): Promise<FastTemporal<A>> {
  // Errors only: a worker says INFO at every state change, and WARN at every activity failure
  // (tests make stand-ins fail). A workflow failure (workflows/interceptors.ts logs it) is for its test to assert.
  Runtime.install({
    logger: new DefaultLogger('ERROR', (entry) => {
      if (entry.message !== 'workflow failed') process.stderr.write(`[temporal ${entry.level}] ${entry.message} ${inspect(entry.meta)}\n`);
    }),
  });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: ensureTemporalBinary() },
      ip: '127.0.0.1',
      searchAttributes: mailroomSearchAttributes,
      log: { format: 'pretty', level: 'error' },
    },
  });
  const bundle = await workflowBundle();
  let coverage: WorkflowCoverage | undefined;
  if (bundle.instrumented) {
    // The sandbox's coverage arrives through a sink and is merged into this file's (what jest reports).
    (globalThis as { __coverage__?: unknown }).__coverage__ ??= {};
    coverage = new WorkflowCoverage();
  }

  let current: Partial<ActivityMap> = {};
  const activities: ActivityMap = Object.fromEntries(
    options.activities.map((name) => [
      name,
      (...args: unknown[]) => {
        const standIn = current[name];
        if (!standIn) throw ApplicationFailure.nonRetryable(`the test gave no stand-in for ${name}`);
        return standIn(...args);
      },
    ]),
  );

  const taskQueue = `fast-${crypto.randomUUID()}`;
  const queues: TestQueues = { taskQueue, deliveryQueue: deliveryTaskQueue(taskQueue), importQueue: importTaskQueue(taskQueue) };
  const workerOptions = {
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle.option,
    activities,
    // At the end of the file, an activity still running (a stand-in that waits) is not waited for.
    shutdownGraceTime: '1 second',
  } satisfies WorkerOptions;
  const workers = [await Worker.create(coverage ? coverage.augmentWorkerOptionsWithBundle(workerOptions) : workerOptions)];
  // Activities only (no workflow code to load: a second of the worker's start).
  if (options.imports)
    workers.push(await Worker.create({ connection: env.nativeConnection, taskQueue: queues.importQueue, activities, shutdownGraceTime: '1 second' }));
  const running = workers.map((worker) => worker.run());

  return {
    ...queues,
    env,
    client: env.client,
    standIns(given) {
      current = given as Partial<ActivityMap>;
    },
    async teardown() {
      for (const worker of workers) worker.shutdown();
      await Promise.all(running);
      if (coverage) {
        coverage.mergeIntoGlobalCoverage();
        // The bundle instruments every module it holds (temporal/'s too): workflows/ is what the tier measures.
        // Plain data, as jest expects of __coverage__ (the merge leaves FileCoverage objects, which serialize as their data).
        const holder = globalThis as { __coverage__?: Record<string, unknown> };
        const files = Object.entries(JSON.parse(JSON.stringify(holder.__coverage__ ?? {})) as Record<string, unknown>);
        holder.__coverage__ = Object.fromEntries(files.filter(([file]) => file.startsWith(WORKFLOWS_DIR)));
      }
      await env.teardown();
    },
  };
}
