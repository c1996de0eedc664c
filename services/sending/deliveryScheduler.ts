import type { Orm } from '../../db/orm';
import type { Logger } from '../../lib/logger';
import type { TemporalHandle } from '../../temporal/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import { emailRepository, type NewEmail } from '../../db/emails/emailRepository';
import { BillingLimitExceeded, categoryOfSource, usageCaps, type UsageCategory } from '../billing/usageCaps';
import { startWorkflow, workflowStartLogFields } from '../../temporal/startWorkflow';
import { MAX_EMAILS_PER_DELIVERY, deliveryWorkflowIds, deliveryWorkflowStart } from '../../temporal/deliveryWorkflowStart';

type AcceptedEmail = Omit<NewEmail, 'deliveryWorkflowId'>;

interface PendingSend {
  projectId: string;
  emails: AcceptedEmail[];
  resolve(): void;
  reject(err: unknown): void;
}

interface DeliveryBatch {
  projectId: string;
  workflowId: string;
  emails: AcceptedEmail[];
  sends: Set<PendingSend>;
}

/**
 * Records accepted emails and durably schedules their delivery before /v1/send answers
 * (contract sections 9 and 14). Sends arriving while earlier ones are being recorded wait and
 * are recorded together: one INSERT for all of them, then one delivery workflow per batch of up
 * to DELIVERY_BATCH_MAX (at most MAX_EMAILS_PER_DELIVERY) emails of a project. Every workflow start
 * is a round of history writes on the Temporal server, so under load one workflow per email
 * cannot keep up with the sends (the figures: docs/benchmarks.md, `bench:send`), while batches
 * form only under load: a lone send still gets its own `send-<emailId>`.
 *
 * A send is answered once its rows are committed and every workflow carrying them has started.
 * When a start fails, each send with emails in that batch is settled all or nothing: withdrawn
 * whole while no delivery has claimed any of its emails (then it fails, 503, and a retry sends
 * no doubles), else left recorded and answered as accepted, because its mail will be sent: a
 * start that timed out may have started after all, and what it did not deliver, or what a
 * withdrawal that failed left, the delivery sweep (emailDeliverySweepWorkflow) starts later, as
 * it does for a process that dies between the commit and the start.
 */
export class DeliveryScheduler {
  private queue: PendingSend[] = [];
  private inFlight = 0;

  constructor(
    private readonly deps: { orm: Orm; temporal: TemporalHandle; logger: Logger; retryDelaysSeconds: number[] },
    private readonly options: { maxBatch: number; maxInFlight: number },
  ) {}

  /** Emails per delivery workflow: DELIVERY_BATCH_MAX, never more than a workflow's search attributes can name. */
  private get maxBatch(): number {
    return Math.min(this.options.maxBatch, MAX_EMAILS_PER_DELIVERY);
  }

  /** Resolves once the emails are recorded and their delivery scheduled. */
  record(projectId: string, emails: AcceptedEmail[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ projectId, emails, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length) {
      // Up to a few batches' worth of sends per round: rows of a round share one INSERT.
      let taken = 0;
      let count = 0;
      while (count < this.queue.length && (count === 0 || taken + this.queue[count].emails.length <= this.maxBatch * 4)) {
        taken += this.queue[count].emails.length;
        count++;
      }
      const round = this.queue.splice(0, count);
      this.inFlight++;
      void this.flush(round).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** Cuts a round's queued emails into batches of one project each, in arrival order. */
  private batches(round: PendingSend[]): DeliveryBatch[] {
    const open = new Map<string, DeliveryBatch>();
    const done: DeliveryBatch[] = [];
    for (const send of round) {
      for (const email of send.emails) {
        if (email.status !== 'QUEUED') continue;
        let batch = open.get(send.projectId);
        if (!batch) {
          batch = { projectId: send.projectId, workflowId: '', emails: [], sends: new Set() };
          open.set(send.projectId, batch);
          done.push(batch);
        }
        batch.emails.push(email);
        batch.sends.add(send);
        if (batch.emails.length >= this.maxBatch) open.delete(send.projectId);
      }
    }
    for (const batch of done) batch.workflowId = deliveryWorkflowIds.forEmails(batch.emails.map((e) => e.id));
    return done;
  }

  private async flush(all: PendingSend[]): Promise<void> {
    let round: PendingSend[];
    let batches: DeliveryBatch[];
    const refused = new Map<PendingSend, BillingLimitExceeded>();
    try {
      // The emails are counted against their monthly caps in the transaction that records them:
      // a send the cap cannot take is refused whole and records nothing (contract 17).
      ({ round, batches } = await this.deps.orm.em.fork().transactional(async (tx) => {
        for (const sends of byProjectInLockOrder(all)) {
          for (const [send, refusal] of await reserveCapsOfProject(tx, sends)) refused.set(send, refusal);
        }
        const round = all.filter((send) => !refused.has(send));
        const batches = this.batches(round);
        const workflowOf = new Map<string, string>();
        for (const batch of batches) for (const email of batch.emails) workflowOf.set(email.id, batch.workflowId);
        await emailRepository.insertMany(
          tx,
          round.flatMap((send) => send.emails.map((email) => ({ ...email, deliveryWorkflowId: workflowOf.get(email.id) ?? null }))),
        );
        return { round, batches };
      }));
    } catch (err) {
      for (const send of all) send.reject(err);
      return;
    }
    for (const [send, refusal] of refused) send.reject(refusal);

    const failedSends = new Map<PendingSend, unknown>();
    await Promise.all(
      batches.map(async (batch) => {
        try {
          await this.start(batch);
        } catch (err) {
          this.deps.logger.error(
            { ...workflowStartLogFields(err), workflowId: batch.workflowId, projectId: batch.projectId },
            'could not start a delivery workflow',
          );
          for (const send of batch.sends) failedSends.set(send, err);
        }
      }),
    );
    const withdrawn = new Set<PendingSend>();
    await Promise.all([...failedSends.keys()].map(async (send) => (await this.withdraw(send)) && withdrawn.add(send)));
    for (const send of round) {
      if (withdrawn.has(send)) send.reject(failedSends.get(send));
      else send.resolve();
    }
  }

  /**
   * Takes back a send whose delivery failed to start, whole: true when nothing of it will be sent.
   * False (the send is answered as accepted) when a delivery already claimed one of its emails
   * (a start that looked failed had started) or the withdrawal itself failed: its mail stays
   * recorded and is sent, by that delivery or by the sweep.
   */
  private async withdraw(send: PendingSend): Promise<boolean> {
    const emailIds = send.emails.map((e) => e.id);
    try {
      if (await emailRepository.withdrawUntouched(this.deps.orm.em.fork(), emailIds)) return true;
      this.deps.logger.warn(
        { projectId: send.projectId, emails: emailIds.length, firstEmailId: emailIds[0] },
        "a delivery start failed, but a delivery had already claimed some of the send's emails: the send is accepted and its mail will be sent",
      );
    } catch (err) {
      this.deps.logger.error(
        { err, projectId: send.projectId, emails: emailIds.length, firstEmailId: emailIds[0] },
        'a delivery start failed and its send could not be withdrawn: the send is accepted and the delivery sweep will send its mail',
      );
    }
    return false;
  }

  private async start(batch: DeliveryBatch): Promise<void> {
    const emailIds = batch.emails.map((e) => e.id);
    await startWorkflow(
      this.deps.temporal,
      'emailDeliveryWorkflow',
      deliveryWorkflowStart({
        taskQueue: this.deps.temporal.taskQueue,
        workflowId: batch.workflowId,
        projectId: batch.projectId,
        emailIds,
        retryDelaysSeconds: this.deps.retryDelaysSeconds,
        // A batch's emails may be to different contacts: only one email's contact is named.
        contactId: batch.emails.length === 1 ? batch.emails[0].contactId : null,
      }),
    );
  }
}

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
