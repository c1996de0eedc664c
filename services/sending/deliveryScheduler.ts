import type { Orm } from '../../db/orm';
import type { Logger } from '../../lib/logger';
import type { TemporalHandle } from '../../temporal/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/common';
import { emailRepository, type NewEmail } from '../../db/emails/emailRepository';
import { recordedEmailIds } from '../../db/emails/recordedEmailIds';
import { isDatabaseUnavailable, retryWhileDatabaseUnavailable } from '../../db/databaseAvailability';
import { BillingLimitExceeded, categoryOfSource, usageCaps, type UsageCategory } from '../billing/usageCaps';
import { startWorkflow, WorkflowStartError, workflowStartLogFields } from '../../temporal/startWorkflow';
import { MAX_EMAILS_PER_DELIVERY, deliveryWorkflowIds, deliveryWorkflowStart } from '../../temporal/deliveryWorkflowStart';

type AcceptedEmail = Omit<NewEmail, 'deliveryWorkflowId'>;

/** Written in the transaction that records a send's emails, so it commits with them or not at all (the request's Idempotency-Key outcome). */
export type AlsoInTransaction = (tx: EntityManager) => Promise<void>;

interface PendingSend {
  projectId: string;
  emails: AcceptedEmail[];
  alsoInTransaction?: AlsoInTransaction;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * One delivery workflow being filled: its id is recorded with each email that joins it, so it is
 * fixed before its first email is written. Started once closed (full, or its window over).
 */
interface Gathering {
  projectId: string;
  workflowId: string;
  /** Emails that joined, recorded or in the round being recorded (how full it is). */
  joined: number;
  /** Recorded (committed) emails: what the workflow carries (ids only: the content stays in the rows). */
  emailIds: string[];
  /** The contact of its first recorded email, named in ContactId when it carries that one email alone. */
  contactId: string | null;
  /** Takes no more emails. */
  closed: boolean;
  timer?: NodeJS.Timeout;
}

/** Emails a round records at most, in batches' worth (one INSERT); more wait for the next round. */
const ROUND_BATCHES = 4;
/**
 * How long a project's delivery workflow gathers accepted emails after the project's previous one
 * was closed, unless it fills up first. A send after a quiet spell starts its own workflow as soon
 * as its round commits (a lone send's `send-<emailId>`, no wait); sends following it within this
 * window gather, so one project's sends start at most one partly filled workflow per window and
 * process, whatever their rate. Every start costs Temporal a round of history writes (about
 * 22 ms of CPU across processes, docs/benchmarks.md `bench:send`): a workflow per round would
 * cost more than the sends, now that a round is only its INSERT. 250 ms rather than 100: at 300
 * sends/s a workflow then carries ~44 emails instead of ~33 (50 at most, DELIVERY_BATCH_MAX), and
 * a send costs ~8 % less CPU over all processes with a lower p99 (docs/benchmarks.md, `bench:send`,
 * "A longer gathering window"); a gathered send's delivery waits at most 250 ms for its start.
 */
const GATHER_MS = 250;
/** Starts sent to Temporal at once; the others wait their turn in memory. */
const CONCURRENT_STARTS = 16;
/**
 * Closed workflows whose start waits or runs, at most (about 3 KB each). While Temporal is away a
 * start fails only after its deadline (5 s), so without a bound the waiting ones would grow
 * with every send; beyond it a closed workflow is not started from here but left to the delivery
 * sweep, which starts it under the same id once its emails are DELIVERY_SWEEP_AFTER_SECONDS old.
 */
const MAX_PENDING_STARTS = 1000;
/** How long the lookup of a round whose commit went unanswered waits for the database. */
const LOST_COMMIT_PATIENCE_MS = 10_000;
/** How long a shutdown waits for the starts still pending; the sweep starts what is left. */
const DRAIN_MS = 10_000;
/** At most one line per this about starts left to the sweep for the bound. */
const OVERFLOW_LOG_MS = 10_000;

/**
 * Records accepted emails (contract 9) and starts their delivery afterwards. `record` resolves as
 * soon as the emails are committed: the rows, each naming the delivery workflow that will carry it,
 * are the durable record of the obligation, and POST /v1/send and the SMTP relay answer then,
 * also while Temporal is away.
 *
 * Sends arriving while a round is being recorded form the next round: one INSERT for all of them,
 * with the count against their monthly caps (one statement in the usual case, a transaction at a
 * cap's edge, for several projects or with an idempotency outcome to write). Their QUEUED emails gather per
 * project into delivery workflows of up to DELIVERY_BATCH_MAX (at most MAX_EMAILS_PER_DELIVERY)
 * emails for GATHER_MS, and each workflow is started once closed, after the answer. A start that
 * fails (Temporal away, a refusal), one over MAX_PENDING_STARTS, and one a killed process never
 * made are all the same case: the emails stay QUEUED and unattempted under their recorded
 * workflow id, and the delivery sweep (workflows/emailDeliverySweepWorkflow.ts) starts that id
 * within DELIVERY_SWEEP_AFTER_SECONDS plus its period. Both starters use the recorded id, so a start
 * merely in progress and the sweep's start meet at one workflow: Temporal refuses the second
 * while the first runs, this scheduler's starts refuse an id already used, and whatever a later
 * run finds already claimed or sent it leaves alone (per-email claims).
 */
export class DeliveryScheduler {
  private queue: PendingSend[] = [];
  private writing = false;
  /** Each project's gathering workflow, while it takes emails. */
  private readonly open = new Map<string, Gathering>();
  /** When each project's last delivery workflow closed (the start of its gathering window). */
  private readonly lastClosedAt = new Map<string, number>();
  /** Closed workflows whose round has not committed yet: started once it has. */
  private readonly closing = new Set<Gathering>();
  /** Closed workflows with recorded emails, waiting for a start slot. */
  private readonly waiting: Gathering[] = [];
  private readonly starts = new Set<Promise<void>>();
  private overflow = { count: 0, loggedAt: 0 };

  constructor(
    private readonly deps: { orm: Orm; temporal: TemporalHandle; logger: Logger; retryDelaysSeconds: number[] },
    private readonly options: { maxBatch: number },
  ) {}

  /** Emails per delivery workflow: DELIVERY_BATCH_MAX, never more than a workflow's search attributes can name. */
  private get maxBatch(): number {
    return Math.min(this.options.maxBatch, MAX_EMAILS_PER_DELIVERY);
  }

  /**
   * Resolves once the emails are committed (their delivery starts afterwards). `alsoInTransaction`
   * runs in the transaction that records them, unless the send is refused at its cap.
   */
  record(projectId: string, emails: AcceptedEmail[], alsoInTransaction?: AlsoInTransaction): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ projectId, emails, alsoInTransaction, resolve, reject });
      this.pump();
    });
  }

  /** Delivery starts waiting or running (gathering workflows not counted). */
  get pendingStarts(): number {
    return this.waiting.length + this.starts.size;
  }

  /**
   * Shutdown, once no send can arrive any more: starts the workflows still gathering and waits for
   * the pending starts, for at most DRAIN_MS; what is left then the delivery sweep starts.
   */
  async drain(): Promise<void> {
    const giveUpAt = Date.now() + DRAIN_MS;
    while ((this.writing || this.queue.length) && Date.now() < giveUpAt) await pause(20);
    for (const gathering of [...this.open.values()]) this.close(gathering);
    if (!this.writing) this.startClosed();
    while ((this.starts.size || this.waiting.length) && Date.now() < giveUpAt) await pause(Math.min(50, giveUpAt - Date.now()));
    if (this.pendingStarts) {
      this.deps.logger.warn({ workflows: this.pendingStarts }, 'stopping with delivery starts still pending: the delivery sweep starts them');
    }
  }

  private pump(): void {
    if (this.writing || !this.queue.length) return;
    // Up to a few batches' worth of sends per round: rows of a round share one INSERT.
    let taken = 0;
    let count = 0;
    while (count < this.queue.length && (count === 0 || taken + this.queue[count].emails.length <= this.maxBatch * ROUND_BATCHES)) {
      taken += this.queue[count].emails.length;
      count++;
    }
    const round = this.queue.splice(0, count);
    this.writing = true;
    void this.flush(round).finally(() => {
      this.writing = false;
      this.startClosed();
      this.pump();
    });
  }

  /**
   * Gives each QUEUED email of the round its delivery workflow, in arrival order. A project with
   * no workflow gathering and none closed within GATHER_MS gets workflows that close with this
   * round, named after their emails (`send-<id>` for one); otherwise its emails join the gathering
   * workflow, named `deliver-<first email id>` when it opens since later rounds may join it.
   * Answers the workflow of each email, and the count each workflow took (given back if the
   * round fails).
   */
  private assign(round: PendingSend[]): { workflowOf: Map<string, Gathering>; joined: Map<Gathering, number> } {
    const now = Date.now();
    const workflowOf = new Map<string, Gathering>();
    const joined = new Map<Gathering, number>();
    /** This round's own workflows (closing with it), per project; named once the round is cut. */
    const ownWorkflows = new Map<string, Gathering>();
    const own = new Map<Gathering, string[]>();
    for (const send of round) {
      for (const email of send.emails) {
        if (email.status !== 'QUEUED') continue;
        let gathering = ownWorkflows.get(send.projectId) ?? this.open.get(send.projectId);
        if (!gathering) {
          const gatherFrom = (this.lastClosedAt.get(send.projectId) ?? -Infinity) + GATHER_MS;
          gathering = { projectId: send.projectId, workflowId: '', joined: 0, emailIds: [], contactId: null, closed: false };
          if (gatherFrom <= now) {
            // Closes with the round: nothing else joins it, so its emails are known when it is named.
            ownWorkflows.set(send.projectId, gathering);
            own.set(gathering, []);
            this.closing.add(gathering);
          } else {
            gathering.workflowId = deliveryWorkflowIds.batch([email.id]);
            this.open.set(send.projectId, gathering);
            gathering.timer = setTimeout(() => {
              this.close(gathering!);
              // A round being recorded may hold some of its emails: the round's end starts it.
              if (!this.writing) this.startClosed();
            }, gatherFrom - now);
          }
        }
        gathering.joined++;
        joined.set(gathering, (joined.get(gathering) ?? 0) + 1);
        own.get(gathering)?.push(email.id);
        workflowOf.set(email.id, gathering);
        if (gathering.joined >= this.maxBatch) {
          if (ownWorkflows.get(send.projectId) === gathering) ownWorkflows.delete(send.projectId);
          else this.close(gathering);
        }
      }
    }
    for (const [gathering, ids] of own) {
      gathering.workflowId = deliveryWorkflowIds.forEmails(ids);
      gathering.closed = true;
      this.lastClosedAt.set(gathering.projectId, now);
    }
    return { workflowOf, joined };
  }

  /** No more emails join it; it is started once the round recording its last ones has committed. */
  private close(gathering: Gathering): void {
    if (gathering.closed) return;
    gathering.closed = true;
    clearTimeout(gathering.timer);
    if (this.open.get(gathering.projectId) === gathering) this.open.delete(gathering.projectId);
    this.lastClosedAt.set(gathering.projectId, Date.now());
    this.closing.add(gathering);
  }

  private async flush(all: PendingSend[]): Promise<void> {
    if (await this.recordInOneStatement(all)) return;
    const refused = new Map<PendingSend, BillingLimitExceeded>();
    // Set inside the transaction, read after it whether it committed or not.
    const recording: { round: PendingSend[]; assigned?: ReturnType<DeliveryScheduler['assign']>; ids?: string[] } = { round: [] };
    try {
      // The emails are counted against their monthly caps in the transaction that records them:
      // a send the cap cannot take is refused whole and records nothing (contract 17).
      await this.deps.orm.em.fork().transactional(async (tx) => {
        for (const sends of byProjectInLockOrder(all)) {
          for (const [send, refusal] of await reserveCapsOfProject(tx, sends)) refused.set(send, refusal);
        }
        const round = all.filter((send) => !refused.has(send));
        const assigned = this.assign(round);
        const rows = round.flatMap((send) =>
          send.emails.map((email) => ({ ...email, deliveryWorkflowId: assigned.workflowOf.get(email.id)?.workflowId ?? null })),
        );
        Object.assign(recording, { round, assigned, ids: rows.map((row) => row.id) });
        await emailRepository.insertMany(tx, rows);
        for (const send of round) await send.alsoInTransaction?.(tx);
      });
    } catch (err) {
      if (!recording.ids?.length || !(await this.committedAfterAll(err, recording.ids))) {
        if (recording.assigned) this.giveBack(recording.assigned.joined);
        for (const send of all) send.reject(err);
        return;
      }
    }
    for (const [send, refusal] of refused) send.reject(refusal);
    this.recorded(recording.round, recording.assigned!.workflowOf);
  }

  /**
   * The usual round, one project's sends whose emails count in one category (or in none) with no
   * outcome to write beside them: the cap's reservation and the insert as one statement, committed
   * on its own (one round trip instead of a transaction's four). False when the round is not one of
   * those, or when the cap has no room or this month's counter is still to be created: nothing was
   * written, and the transaction records the round. True once the round is settled.
   */
  private async recordInOneStatement(round: PendingSend[]): Promise<boolean> {
    const projectId = round[0].projectId;
    if (round.some((send) => send.alsoInTransaction || send.projectId !== projectId)) return false;
    const counts = [...countsOf(round)];
    if (counts.length > 1) return false;
    const assigned = this.assign(round);
    const rows = round.flatMap((send) => send.emails.map((email) => ({ ...email, deliveryWorkflowId: assigned.workflowOf.get(email.id)?.workflowId ?? null })));
    const ids = rows.map((row) => row.id);
    const em = this.deps.orm.em.fork();
    try {
      const [counted] = counts;
      if (!counted) await emailRepository.insertMany(em, rows);
      else if (!(await emailRepository.insertManyWithinCap(em, rows, { projectId, category: counted[0], n: counted[1] }))) {
        // Nothing was written: the transaction reserves send by send (or creates the month's counter).
        this.giveBack(assigned.joined);
        return false;
      }
    } catch (err) {
      if (!(await this.committedAfterAll(err, ids))) {
        this.giveBack(assigned.joined);
        for (const send of round) send.reject(err);
        return true;
      }
    }
    this.recorded(round, assigned.workflowOf);
    return true;
  }

  /** The round's emails are committed: each joins its workflow's ids, and its send is answered. */
  private recorded(round: PendingSend[], workflowOf: Map<string, Gathering>): void {
    for (const send of round) {
      for (const email of send.emails) {
        const gathering = workflowOf.get(email.id);
        if (!gathering) continue;
        if (!gathering.emailIds.length) gathering.contactId = email.contactId;
        gathering.emailIds.push(email.id);
      }
    }
    for (const send of round) send.resolve();
  }

  /**
   * Whether a round whose transaction failed was committed all the same: the commit went out but
   * its answer was lost with the connection. Its rows are looked up by their ids (the database
   * waited for a while), since a send answered 5xx must not be sent. Only for the database's
   * unavailability: any other failure rolled the round back.
   */
  private async committedAfterAll(err: unknown, ids: string[]): Promise<boolean> {
    if (!isDatabaseUnavailable(err)) return false;
    try {
      const found = await retryWhileDatabaseUnavailable(() => recordedEmailIds(this.deps.orm.em.fork(), ids), { patienceMs: LOST_COMMIT_PATIENCE_MS });
      if (!found.size) return false;
      this.deps.logger.warn(
        { err, emails: ids.length, found: found.size, firstEmailId: ids[0] },
        "a round's commit went unanswered but its emails are recorded: its sends are accepted",
      );
      return true;
    } catch (lookupErr) {
      this.deps.logger.error(
        { err, lookupErr, emails: ids.length, firstEmailId: ids[0] },
        "a round's commit went unanswered and the database did not answer the lookup of its emails: its sends fail",
      );
      return false;
    }
  }

  /** A failed round's emails never joined: their workflows take as many more, and one of the round's own never starts. */
  private giveBack(joined: Map<Gathering, number>): void {
    for (const [gathering, n] of joined) {
      gathering.joined -= n;
      if (!gathering.closed && gathering.joined <= 0) this.close(gathering);
    }
  }

  /** Queues the closed workflows with recorded emails for their start; call it only between rounds. */
  private startClosed(): void {
    for (const gathering of this.closing) {
      if (!gathering.closed) continue;
      this.closing.delete(gathering);
      if (!gathering.emailIds.length) continue;
      if (this.pendingStarts >= MAX_PENDING_STARTS) this.leaveToSweep(gathering);
      else this.waiting.push(gathering);
    }
    this.startWaiting();
  }

  /** Starts waiting workflows while a slot is free. */
  private startWaiting(): void {
    while (this.starts.size < CONCURRENT_STARTS && this.waiting.length) {
      const starting = this.start(this.waiting.shift()!);
      this.starts.add(starting);
      void starting.finally(() => {
        this.starts.delete(starting);
        this.startWaiting();
      });
    }
  }

  private leaveToSweep(gathering: Gathering): void {
    this.overflow.count++;
    if (Date.now() - this.overflow.loggedAt < OVERFLOW_LOG_MS) return;
    this.deps.logger.warn(
      { workflows: this.overflow.count, pending: this.pendingStarts, lastWorkflowId: gathering.workflowId, projectId: gathering.projectId },
      `more than ${MAX_PENDING_STARTS} delivery starts pending: the emails are recorded and the delivery sweep starts these`,
    );
    this.overflow = { count: 0, loggedAt: Date.now() };
  }

  private async start(gathering: Gathering): Promise<void> {
    const { emailIds } = gathering;
    try {
      await startWorkflow(this.deps.temporal, 'emailDeliveryWorkflow', {
        ...deliveryWorkflowStart({
          taskQueue: this.deps.temporal.taskQueue,
          workflowId: gathering.workflowId,
          projectId: gathering.projectId,
          emailIds,
          retryDelaysSeconds: this.deps.retryDelaysSeconds,
          // A batch's emails may be to different contacts: only one email's contact is named.
          contactId: emailIds.length === 1 ? gathering.contactId : null,
        }),
        // Its id is new (named after a new email), so a run under it is this one or the sweep's:
        // a start arriving after the sweep's run closed must not run the delivery again.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
    } catch (err) {
      // The sweep got there first (this start was slow), or a retried call found its own start.
      if (err instanceof WorkflowStartError && err.cause instanceof WorkflowExecutionAlreadyStartedError) return;
      this.deps.logger.error(
        { ...workflowStartLogFields(err), workflowId: gathering.workflowId, projectId: gathering.projectId, emails: emailIds.length },
        'could not start a delivery workflow: the emails are recorded and the delivery sweep starts it',
      );
    }
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The round's sends grouped by project, the groups in the order their counter rows are locked
 * (project id): two rounds in flight lock rows in the same order, so they wait for each other
 * rather than deadlock. Within a group, sends keep their arrival order.
 */
function byProjectInLockOrder(sends: PendingSend[]): PendingSend[][] {
  const groups = new Map<string, PendingSend[]>();
  for (const send of sends) groups.set(send.projectId, [...(groups.get(send.projectId) ?? []), send]);
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, group]) => group);
}

/** A send's QUEUED emails per category (SUPPRESSED ones count nowhere). */
function countsOf(sends: PendingSend[]): Map<UsageCategory, number> {
  const counts = new Map<UsageCategory, number>();
  for (const send of sends) {
    for (const email of send.emails) {
      if (email.status !== 'QUEUED') continue;
      const category = categoryOfSource[email.source];
      counts.set(category, (counts.get(category) ?? 0) + 1);
    }
  }
  return counts;
}

/**
 * Reserves one project's sends against their caps: first all of them at once (one statement per
 * category, the usual case: no cap, or room to spare), and only when that would pass a cap, send
 * by send in arrival order, so the sends that fit go and each one that does not is refused whole.
 * A refused attempt changes no counter, so the fallback starts from the same state.
 */
async function reserveCapsOfProject(tx: EntityManager, sends: PendingSend[]): Promise<Map<PendingSend, BillingLimitExceeded>> {
  const refused = new Map<PendingSend, BillingLimitExceeded>();
  if (sends.length > 1 && !(await reserveCounts(tx, sends[0].projectId, countsOf(sends)))) return refused;
  for (const send of sends) {
    const refusal = await reserveCounts(tx, send.projectId, countsOf([send]));
    if (refusal) refused.set(send, refusal);
  }
  return refused;
}

/** Reserves every category's count, all or nothing; the refusal when one is full (nothing kept). */
async function reserveCounts(tx: EntityManager, projectId: string, counts: Map<UsageCategory, number>): Promise<BillingLimitExceeded | null> {
  const reserved: Array<[UsageCategory, number]> = [];
  for (const [category, n] of [...counts].sort(([a], [b]) => a.localeCompare(b))) {
    try {
      await usageCaps.reserve(tx, projectId, category, n);
      reserved.push([category, n]);
    } catch (err) {
      if (!(err instanceof BillingLimitExceeded)) throw err;
      for (const [c, count] of reserved) await usageCaps.release(tx, projectId, c, count);
      return err;
    }
  }
  return null;
}
