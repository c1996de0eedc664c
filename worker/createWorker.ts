import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { Config } from '../lib/config';
import { createActivities, type ActivityDeps } from '../activities';
import { createWebhookDeliveryActivities } from '../activities/webhookDeliveryActivities';
import { watchCpuStarvation, type CpuStarvation } from '../lib/process/cpuStarvation';
import { activityFailureLogging } from './temporalLogging';
import { deliveryTaskQueue, importTaskQueue, webhookTaskQueue } from '../temporal/taskQueues';
import { createWebhookWakeups, type WebhookWakeups } from '../services/webhooks/webhookWakeups';
import { temporalConnectionOptions } from '../temporal/connectionOptions';
import { workflowBundleFile } from './workflowBundle';

/**
 * The longest an activity's heartbeats are held back before one goes to Temporal. A cancellation
 * (from the Temporal UI, or a workflow cancelled through the API) reaches a running activity only
 * in the answer to a heartbeat, and the SDK otherwise sends them every 0.8 × the heartbeat timeout
 * (8 s for an import, 24 s for a campaign batch): an import would go on writing contacts that long
 * after its cancel. At most one heartbeat a second per running activity (20 or so a worker) costs
 * Temporal little. The webhook worker keeps the SDK's default (webhookWorkerOf says why).
 */
const HEARTBEAT_THROTTLE = '1 second';

export interface CreateWorkerOptions extends ActivityDeps {
  connection?: NativeConnection;
  workflowBundle?: WorkflowBundleOption;
}

export interface MailroomWorkers {
  /** The worker whose state the worker's /health reports: the main queue's, or the webhook one alone. */
  worker: Worker;
  /** Every worker of this process: run them all. */
  all: Worker[];
  connection: NativeConnection;
  /** Where webhook delivery runs: listening for due messages. Close after the workers have stopped. */
  webhookWakeups?: WebhookWakeups;
}

/**
 * The workers of a worker process, by WORKER_ROLE (`all` unless told):
 * - the worker of the main task queue (every workflow and activity);
 * - the import worker, an activity-only worker on the import task queue that runs at most
 *   IMPORT_CONCURRENCY CSV imports at once, so memory and database load stay bounded however many
 *   are queued;
 * - the delivery worker on the delivery task queue, whose own slots keep transactional mail moving
 *   whatever the main queue is busy with;
 * - the webhook worker, an activity-only worker whose slots (WEBHOOK_DELIVERY_SLOTS) are held by
 *   endpoints' delivery runs, so a slow receiver never takes a slot mail needs.
 * `main` runs the first three, `webhooks` the last alone (createWebhookWorker), `all` every one.
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
  const withWebhooks = config.workerRole === 'all';
  const webhookWakeups = withWebhooks ? createWebhookWakeupsOf(options, connection) : undefined;
  const activities = createActivities({ ...options, webhookWakeups });
  // The main and delivery workers run workflows: on one workflow thread (see sharingOneWorkflowThread).
  const WorkflowWorker = sharingOneWorkflowThread();
  const worker = await WorkflowWorker.create({
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
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
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
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
  });
  const deliveryWorker = await WorkflowWorker.create({
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
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
  });
  const all = [worker, importWorker, deliveryWorker];
  if (webhookWakeups) all.push(await webhookWorkerOf(options, connection, webhookWakeups));
  return { worker, all, connection, webhookWakeups };
}

/**
 * Worker, except that the Workers it creates with a workflow bundle share one workflow thread. The
 * SDK gives each such Worker a thread of its own, a V8 isolate holding the bundle and its cached
 * workflows: a second one held ~28 MiB of the worker's resident memory at rest and ~22 MiB more at
 * a campaign's peak. Each Worker still polls its own task queue with its own slots, sticky cache
 * and deadlock timeout; only the activations of both queues run on the one thread, one at a time.
 * The thread checks local activities against the activities of the first Worker created (the main
 * queue's: every one), and stops when the last of them has. Worker.createWorkflowCreator is the
 * SDK's protected hook for this (@temporalio/worker is pinned to one version).
 */
function sharingOneWorkflowThread() {
  // A class per call: each set of workers (a process's, or a test stack's) has its own thread.
  return class WorkflowThreadSharingWorker extends Worker {
    static #thread?: ReturnType<typeof Worker.createWorkflowCreator>;
    static #users = 0;

    protected static override async createWorkflowCreator(...args: Parameters<typeof Worker.createWorkflowCreator>) {
      const creator = await (WorkflowThreadSharingWorker.#thread ??= super.createWorkflowCreator(...args));
      WorkflowThreadSharingWorker.#users++;
      return {
        createWorkflow: creator.createWorkflow.bind(creator),
        destroy: async () => {
          if (--WorkflowThreadSharingWorker.#users === 0) await creator.destroy();
        },
      };
    }
  };
}

/** What a `webhooks` worker process needs: no mail, no workflows. */
export type WebhookWorkerOptions = Pick<ActivityDeps, 'config' | 'orm' | 'logger'> & { connection: NativeConnection };

/**
 * The webhook worker alone (WORKER_ROLE=webhooks): its process runs at WEBHOOK_WORKER_NICE, so on
 * shared cores the sends, campaigns and the API come first and webhook delivery takes what is
 * left (docs/benchmarks.md, "Outbound webhooks"). The delivery workflows stay on the main queue.
 */
export async function createWebhookWorker(options: WebhookWorkerOptions): Promise<MailroomWorkers & { starvation?: CpuStarvation }> {
  const webhookWakeups = createWebhookWakeupsOf(options, options.connection);
  // At a low priority its runs also wait while mail has the cores, so the PostgreSQL work they
  // cause (at normal priority) waits too.
  const starvation = options.config.webhookWorkerNice > 0 ? watchCpuStarvation() : undefined;
  const worker = await webhookWorkerOf(options, options.connection, webhookWakeups, starvation);
  return { worker, all: [worker], connection: options.connection, webhookWakeups, starvation };
}

function createWebhookWakeupsOf(options: Pick<ActivityDeps, 'config' | 'orm' | 'logger'>, connection: NativeConnection): WebhookWakeups {
  const { config } = options;
  const wakeups = createWebhookWakeups({
    orm: options.orm,
    client: new Client({ connection, namespace: config.temporalNamespace }),
    taskQueue: config.temporalTaskQueue,
    logger: options.logger,
  });
  if (config.databaseUrl) wakeups.listen(config.databaseUrl);
  return wakeups;
}

function webhookWorkerOf(
  options: Pick<ActivityDeps, 'config' | 'orm' | 'logger'>,
  connection: NativeConnection,
  wakeups: WebhookWakeups,
  starvation?: CpuStarvation,
): Promise<Worker> {
  const { config } = options;
  const activities = createWebhookDeliveryActivities({ ...options, webhookWakeups: wakeups, starvation });
  return Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: webhookTaskQueue(config.temporalTaskQueue),
    // Activities only (the workflows run on the main queue): no second copy of the workflow bundle.
    activities: { deliverDueWebhookMessages: activities.deliverDueWebhookMessages.bind(activities) },
    interceptors: { activity: [activityFailureLogging(options.logger)] },
    maxConcurrentActivityTaskExecutions: config.webhooks.deliverySlots,
    shutdownGraceTime: `${config.shutdownTimeoutMs} ms`,
    // Not HEARTBEAT_THROTTLE: a delivery run reads its endpoint again every second and stops on its
    // own when it is deleted or disabled, and with up to WEBHOOK_DELIVERY_SLOTS (200) runs busy at
    // once, a heartbeat a second each would be up to 200 calls a second to Temporal for nothing.
  });
}

export function describeConfig(config: Config) {
  return { taskQueue: config.temporalTaskQueue, namespace: config.temporalNamespace, temporalAddress: config.temporalAddress };
}
