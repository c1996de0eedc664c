import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { Config } from '../lib/config';
import { createActivities, type ActivityDeps } from '../activities';
import { activityFailureLogging } from './temporalLogging';
import { deliveryTaskQueue, importTaskQueue, webhookTaskQueue } from '../temporal/taskQueues';
import { createWebhookWakeups, type WebhookWakeups } from '../services/webhooks/webhookWakeups';
import { temporalConnectionOptions } from '../temporal/connectionOptions';
import { workflowBundleFile } from './workflowBundle';

export interface CreateWorkerOptions extends ActivityDeps {
  connection?: NativeConnection;
  workflowBundle?: WorkflowBundleOption;
}

export interface MailroomWorkers {
  worker: Worker;
  importWorker: Worker;
  deliveryWorker: Worker;
  webhookWorker: Worker;
  /** All of the above: run them all. */
  all: Worker[];
  connection: NativeConnection;
  /** Listening for due webhook messages: close after the workers have stopped. */
  webhookWakeups: WebhookWakeups;
}

/**
 * The worker of the main task queue (every workflow and activity); the import worker, an
 * activity-only worker on the import task queue that runs at most IMPORT_CONCURRENCY CSV imports
 * at once, so memory and database load stay bounded however many are queued; and the delivery
 * worker on the delivery task queue, whose own slots keep transactional mail moving whatever
 * the main queue is busy with; and the webhook worker, an activity-only worker whose slots
 * (WEBHOOK_DELIVERY_SLOTS) are held by endpoints' delivery runs, so a slow receiver never takes a
 * slot mail needs. Run them all.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<MailroomWorkers> {
  const { config } = options;
  const connection = options.connection ?? (await NativeConnection.connect(temporalConnectionOptions(config)));
  const bundleFile = options.workflowBundle ? undefined : await workflowBundleFile();
  try {
    return await createWorkers(options, connection, options.workflowBundle ?? { codePath: bundleFile!.codePath });
  } finally {
    // The workers have read the bundle (or failed to start).
    bundleFile?.dispose();
  }
}

async function createWorkers(options: CreateWorkerOptions, connection: NativeConnection, bundle: WorkflowBundleOption): Promise<MailroomWorkers> {
  const { config } = options;
  const webhookWakeups = createWebhookWakeups({
    orm: options.orm,
    client: new Client({ connection, namespace: config.temporalNamespace }),
    taskQueue: config.temporalTaskQueue,
    logger: options.logger,
  });
  if (config.databaseUrl) webhookWakeups.listen(config.databaseUrl);
  const activities = createActivities({ ...options, webhookWakeups });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    workflowBundle: bundle,
    activities,
    interceptors: {
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
    workflowBundle: bundle,
    activities: {
      deliverEmails: activities.deliverEmails.bind(activities),
      failUndeliveredEmails: activities.failUndeliveredEmails.bind(activities),
    },
    interceptors: {
      activity: [activityFailureLogging(options.logger)],
    },
    maxConcurrentActivityTaskExecutions: 20,
    maxConcurrentWorkflowTaskExecutions: 20,
    maxCachedWorkflows: 500,
    shutdownGraceTime: `${config.shutdownTimeoutMs} ms`,
  });
  const webhookWorker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: webhookTaskQueue(config.temporalTaskQueue),
    // Activities only (the workflows run on the main queue): no second copy of the workflow bundle.
    activities: { deliverDueWebhookMessages: activities.deliverDueWebhookMessages.bind(activities) },
    interceptors: { activity: [activityFailureLogging(options.logger)] },
    maxConcurrentActivityTaskExecutions: config.webhooks.deliverySlots,
    shutdownGraceTime: `${config.shutdownTimeoutMs} ms`,
  });
  return {
    worker,
    importWorker,
    deliveryWorker,
    webhookWorker,
    all: [worker, importWorker, deliveryWorker, webhookWorker],
    connection,
    webhookWakeups,
  };
}

export function describeConfig(config: Config) {
  return { taskQueue: config.temporalTaskQueue, namespace: config.temporalNamespace, temporalAddress: config.temporalAddress };
}
