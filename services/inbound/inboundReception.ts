import crypto from 'node:crypto';
import type { Orm } from '../../db/orm';
import type { Logger } from '../../lib/logger';
import type { TemporalHandle } from '../../temporal/client';
import { inboundMessageRepository, type InboundEnvelope, type NewInboundMessage } from '../../db/inbound/inboundMessageRepository';
import { startWorkflow, workflowStartLogFields } from '../../temporal/startWorkflow';
import { MAX_MESSAGES_PER_INBOUND_WORKFLOW, inboundWorkflowId, inboundWorkflowStart } from '../../temporal/inboundWorkflowStart';

/** A stored message; `duplicate` when a provider handed over a message stored before (`id` is that one's). */
export interface StoredInboundMessage {
  id: string;
  duplicate: boolean;
}

interface PendingMessage {
  message: NewInboundMessage;
  /** The project the message's workflow is filed under. */
  projectId: string;
  resolve(stored: StoredInboundMessage): void;
  reject(err: unknown): void;
}

/** Messages a round stores at most (one INSERT); more wait for the next round. */
const MAX_ROUND = 400;

/**
 * Takes what the inbound listener accepted, and what a provider received for us (SES receipt
 * notifications; contract 20): `store` resolves once the raw message is committed, which is when
 * DATA may be answered 250 (and a notice 200). A provider's message is stored once however often
 * it is handed over (inboundMessageRepository.insertMany). Messages arriving while a round is
 * being written form the next round, one INSERT for all of them, as /v1/send's rounds do
 * (services/sending/deliveryScheduler.ts); then one processing workflow per project and up to
 * MAX_MESSAGES_PER_INBOUND_WORKFLOW messages is started. One workflow per message would cap
 * reception near the hundred workflow starts a second the dev server manages on this machine.
 *
 * The 250 does not wait for the start: the stored row is what makes the message safe. A start
 * that fails (Temporal away, the process killed in between) leaves the rows RECEIVED, and the
 * inbound sweep (inboundSweepWorkflow) starts them under the same workflow id.
 */
export class InboundReception {
  private queue: PendingMessage[] = [];
  private writing = false;
  private readonly starts = new Set<Promise<void>>();

  constructor(private readonly deps: { orm: Orm; temporal: TemporalHandle; logger: Logger }) {}

  /** Resolves with the message's id once the message is durably stored. */
  store(raw: Buffer, envelope: InboundEnvelope): Promise<StoredInboundMessage> {
    const id = crypto.randomUUID();
    const projectId = [...new Set(envelope.recipients.flatMap((r) => r.projectIds))].sort()[0];
    return new Promise<StoredInboundMessage>((resolve, reject) => {
      this.queue.push({ message: { id, raw, envelope, workflowId: '' }, projectId, resolve, reject });
      this.pump();
    });
  }

  /** Waits for workflow starts in progress (shutdown). */
  async drain(): Promise<void> {
    while (this.writing || this.starts.size) {
      await Promise.allSettled([...this.starts]);
      if (this.writing) await new Promise((r) => setTimeout(r, 20));
    }
  }

  private pump(): void {
    if (this.writing || !this.queue.length) return;
    const round = this.queue.splice(0, MAX_ROUND);
    this.writing = true;
    void this.flush(round).finally(() => {
      this.writing = false;
      this.pump();
    });
  }

  private async flush(round: PendingMessage[]): Promise<void> {
    const groups = new Map<string, PendingMessage[][]>();
    for (const pending of round) {
      const chunks = groups.get(pending.projectId) ?? [[]];
      if (chunks[chunks.length - 1].length >= MAX_MESSAGES_PER_INBOUND_WORKFLOW) chunks.push([]);
      chunks[chunks.length - 1].push(pending);
      groups.set(pending.projectId, chunks);
    }
    const workflows = [...groups].flatMap(([projectId, chunks]) =>
      chunks.map((chunk) => {
        const messageIds = chunk.map((p) => p.message.id);
        const workflowId = inboundWorkflowId(messageIds);
        for (const p of chunk) p.message.workflowId = workflowId;
        return { projectId, workflowId, messageIds };
      }),
    );
    let duplicates: Map<string, string>;
    try {
      duplicates = await this.deps.orm.em.fork().transactional((tx) =>
        inboundMessageRepository.insertMany(
          tx,
          round.map((p) => p.message),
        ),
      );
    } catch (err) {
      for (const pending of round) pending.reject(err);
      return;
    }
    for (const pending of round) {
      const storedBefore = duplicates.get(pending.message.id);
      pending.resolve(storedBefore ? { id: storedBefore, duplicate: true } : { id: pending.message.id, duplicate: false });
    }
    // A message stored before is processed by the workflow started for it then (or by the sweep).
    const started = workflows.map((w) => ({ ...w, messageIds: w.messageIds.filter((id) => !duplicates.has(id)) })).filter((w) => w.messageIds.length > 0);
    const starting = Promise.all(started.map((w) => this.start(w))).then(() => undefined);
    this.starts.add(starting);
    void starting.finally(() => this.starts.delete(starting));
  }

  private async start(w: { projectId: string; workflowId: string; messageIds: string[] }): Promise<void> {
    try {
      await startWorkflow(
        this.deps.temporal,
        'inboundMessagesWorkflow',
        inboundWorkflowStart({ taskQueue: this.deps.temporal.taskQueue, workflowId: w.workflowId, projectId: w.projectId, messageIds: w.messageIds }),
      );
    } catch (err) {
      this.deps.logger.error(
        { ...workflowStartLogFields(err), workflowId: w.workflowId, projectId: w.projectId, messages: w.messageIds.length },
        'could not start an inbound processing workflow: the messages are stored and the inbound sweep starts it',
      );
    }
  }
}
