import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import type { Config } from '../lib/config';
import { createActivities, type ActivityDeps } from '../activities';
import { activityFailureLogging } from './temporalLogging';
import { deliveryTaskQueue, importTaskQueue } from '../temporal/taskQueues';
import { temporalConnectionOptions } from '../temporal/connectionOptions';

const workflowsPath = require.resolve('../workflows');
const workflowInterceptorsPath = require.resolve('../workflows/interceptors');

/**
 * Bundles the workflow code once. The worker process bundles at start; tests bundle once per
 * run (`MAILROOM_WORKFLOW_BUNDLE`) and reuse it across the many workers they create.
 */
export async function buildWorkflowBundle(): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [workflowInterceptorsPath], logger: quietBundlerLogger });
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };

export interface CreateWorkerOptions extends ActivityDeps {
  connection?: NativeConnection;
  workflowBundle?: WorkflowBundleOption;
}

export interface MailroomWorkers {
  worker: Worker;
  importWorker: Worker;
  deliveryWorker: Worker;
  /** All of the above: run them all. */
  all: Worker[];
  connection: NativeConnection;
}

/**
 * The worker of the main task queue (every workflow and activity); the import worker, an
 * activity-only worker on the import task queue that runs at most IMPORT_CONCURRENCY CSV imports
 * at once, so memory and database load stay bounded however many are queued; and the delivery
 * worker on the delivery task queue, whose own slots keep transactional mail moving whatever
 * the main queue is busy with. Run all three.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<MailroomWorkers> {
  const { config } = options;
  const connection = options.connection ?? (await NativeConnection.connect(temporalConnectionOptions(config)));
  // Bundled once for both workers that run workflows: each bundling on its own costs its time and
  // leaves webpack's memory behind twice.
  const bundle =
    options.workflowBundle ?? (process.env.MAILROOM_WORKFLOW_BUNDLE ? { codePath: process.env.MAILROOM_WORKFLOW_BUNDLE } : await buildWorkflowBundle());
  const activities = createActivities(options);
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath }),
    activities,
    interceptors: {
      ...(bundle ? {} : { workflowModules: [workflowInterceptorsPath] }),
      activity: [activityFailureLogging(options.logger)],
    },
    // Sized for a 2-core machine; the SDK defaults are for development.
    maxConcurrentActivityTaskExecutions: 20,
    maxConcurrentWorkflowTaskExecutions: 20,
    maxCachedWorkflows: 500,
    shutdownGraceTime: `${config.shutdownTimeoutMs} ms`,
  });
  const importWorker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: importTaskQueue(config.temporalTaskQueue),
    // Bound: Temporal calls an activity as a plain function, whatever object it was taken from.
    activities: { importContactsBatches: activities.importContactsBatches.bind(activities) },
    interceptors: { activity: [activityFailureLogging(options.logger)] },
    maxConcurrentActivityTaskExecutions: config.importConcurrency,
    shutdownGraceTime: `${config.shutdownTimeoutMs} ms`,
  });
  const deliveryWorker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: deliveryTaskQueue(config.temporalTaskQueue),
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath }),
    activities: {
      deliverEmails: activities.deliverEmails.bind(activities),
      failUndeliveredEmails: activities.failUndeliveredEmails.bind(activities),
    },
    interceptors: {
      ...(bundle ? {} : { workflowModules: [workflowInterceptorsPath] }),
      activity: [activityFailureLogging(options.logger)],
    },
    maxConcurrentActivityTaskExecutions: 20,
    maxConcurrentWorkflowTaskExecutions: 20,
    maxCachedWorkflows: 500,
    shutdownGraceTime: `${config.shutdownTimeoutMs} ms`,
  });
  return { worker, importWorker, deliveryWorker, all: [worker, importWorker, deliveryWorker], connection };
}

export function describeConfig(config: Config) {
  return { taskQueue: config.temporalTaskQueue, namespace: config.temporalNamespace, temporalAddress: config.temporalAddress };
}
