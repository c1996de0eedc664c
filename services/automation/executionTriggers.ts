import type { Orm } from '../../db/orm';
import type { EventTriggers, RecordedEventsBatch } from '../events/eventTriggers';
import { executionRepository, type EventForWaitingExecution, type ExecutionToStart } from '../../db/automations/executionRepository';
import { signalWaitingExecution, startExecution, type ExecutionTemporal } from './executionStarts';

interface Logger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * How long a project's trigger and wait event names are cached in each process. A workflow
 * enabled (or a wait step added) elsewhere is seen within this; the API process that changed it
 * forgets at once (forgetAutomationTriggers). An event missed in between is found by the sweep.
 */
const NAMES_TTL_MS = 1000;
/** Temporal calls one process makes at once for starts and signals. */
const PARALLEL_CALLS = 16;

interface NamesOfInterest {
  triggers: Set<string>;
  waits: Set<string>;
  expires: number;
}

const namesCache = new Map<string, NamesOfInterest | Promise<NamesOfInterest>>();

/** Drops a project's cached names: its workflows' triggers, enabled state or wait steps changed. */
export function forgetAutomationTriggers(projectId: string): void {
  namesCache.delete(projectId);
}

async function namesOfInterest(orm: Orm, projectId: string): Promise<NamesOfInterest> {
  const cached = namesCache.get(projectId);
  if (cached && (cached instanceof Promise || cached.expires > Date.now())) return cached;
  const loading = executionRepository.eventNamesOfInterest(orm.em.fork(), projectId).then(
    (names) => {
      const entry = { triggers: new Set(names.triggers), waits: new Set(names.waits), expires: Date.now() + NAMES_TTL_MS };
      if (namesCache.get(projectId) === loading) namesCache.set(projectId, entry);
      return entry;
    },
    (err) => {
      if (namesCache.get(projectId) === loading) namesCache.delete(projectId);
      throw err;
    },
  );
  namesCache.set(projectId, loading);
  if (namesCache.size > 10_000) namesCache.delete(namesCache.keys().next().value!);
  return loading;
}

/**
 * Recorded events → automation executions (contract section 12). Every committed event passes
 * here (services/events/eventTriggers.ts), whoever recorded it: POST /v1/track, a subscription flip,
 * email activity in the API or the worker, segment entry and exit, an UPDATE_CONTACT step.
 *
 * For a batch, one cached lookup says whether any name in it triggers a workflow or is awaited
 * by one; a project without workflows pays nothing more. Otherwise one statement creates the
 * executions (the unique indexes decide re-entry, also between processes at the same instant)
 * and one query finds waiting executions of the same contacts that wait for these names. The
 * caller is answered once the rows are committed; the Temporal starts and signals go out right
 * after, in the background. A process that dies before they went out leaves rows the sweep
 * finds (workflowExecutionSweepWorkflow): executions never started, events never delivered.
 */
export class ExecutionTriggers {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly queue: Array<() => Promise<void>> = [];
  private running = 0;
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly orm: Orm,
    triggers: EventTriggers,
    private readonly temporal: ExecutionTemporal,
    private readonly logger: Logger,
  ) {
    this.unsubscribe = triggers.subscribe((batch) => this.onEvents(batch));
  }

  async onEvents({ projectId, events }: RecordedEventsBatch): Promise<void> {
    if (this.closed || !events.length) return;
    const names = await namesOfInterest(this.orm, projectId);
    const triggering = events.filter((e) => names.triggers.has(e.name)).map((e) => e.id);
    const awaited = events.filter((e) => names.waits.has(e.name)).map((e) => e.id);
    if (!triggering.length && !awaited.length) return;
    const em = this.orm.em.fork();
    const [started, arrivals] = await Promise.all([
      executionRepository.createForEvents(em, projectId, triggering),
      executionRepository.waitingForEvents(this.orm.em.fork(), projectId, awaited),
    ]);
    for (const execution of started) this.enqueue(() => this.start(execution));
    for (const arrival of arrivals) this.enqueue(() => this.signal(arrival));
  }

  private async start(execution: ExecutionToStart): Promise<void> {
    try {
      await startExecution(this.temporal, execution);
    } catch (err) {
      this.logger.warn({ err, executionId: execution.id, projectId: execution.projectId }, 'could not start an execution; the sweep starts it');
    }
  }

  private async signal(arrival: EventForWaitingExecution): Promise<void> {
    try {
      await signalWaitingExecution(this.temporal, arrival);
    } catch (err) {
      this.logger.warn(
        { err, executionId: arrival.executionId, eventId: arrival.eventId },
        'could not hand an event to a waiting execution; the sweep hands it over',
      );
    }
  }

  private enqueue(call: () => Promise<void>): void {
    this.queue.push(call);
    this.pump();
  }

  private pump(): void {
    while (this.running < PARALLEL_CALLS && this.queue.length) {
      const call = this.queue.shift()!;
      this.running++;
      const done: Promise<void> = call().finally(() => {
        this.running--;
        this.inFlight.delete(done);
        this.pump();
      });
      this.inFlight.add(done);
    }
  }

  /** Starts and signals already queued still go out (a stopping API answered for their rows). */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    while (this.inFlight.size || this.queue.length) await Promise.all([...this.inFlight]);
  }
}

const attached = new WeakMap<EventTriggers, ExecutionTriggers>();

/** One listener per trigger point (tests share one between the API and the worker). */
export function attachExecutionTriggers(orm: Orm, triggers: EventTriggers, temporal: ExecutionTemporal, logger: Logger): { close(): Promise<void> } {
  if (attached.has(triggers)) return { close: async () => undefined };
  const listener = new ExecutionTriggers(orm, triggers, temporal, logger);
  attached.set(triggers, listener);
  return {
    close: async () => {
      attached.delete(triggers);
      await listener.close();
    },
  };
}
