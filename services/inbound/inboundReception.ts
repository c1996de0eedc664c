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
 * How long a project's processing workflow gathers stored messages before it starts (unless it
 * fills up first). Rounds are small when mail arrives at a steady rate (one or two messages
 * each), and a workflow per round would ask Temporal for more starts than it manages
 * (docs/benchmarks.md, `bench:inbound`): each workflow takes a quarter of a second's messages
 * instead, and that quarter of a second is all the wait a message adds before processing.
 */
const GATHER_MS = 250;

/** A processing workflow being gathered: its id is written with each message that joins it. */
interface Gathering {
  projectId: string;
  workflowId: string;
  /** Messages that joined, stored or in the round being stored. */
  joined: number;
  /** Stored messages (a message whose round failed never is). */
  messageIds: string[];
  /** Takes no more messages: full, or its time is up. */
  closed: boolean;
  timer: NodeJS.Timeout;
}

/**
 * Takes what the inbound listener accepted, and what a provider received for us (SES receipt
 * notifications; contract 20): `store` resolves once the raw message is committed, which is when
 * DATA may be answered 250 (and a notice 200). A provider's message is stored once however often
 * it is handed over (inboundMessageRepository.insertMany). Messages arriving while a round is
 * being written form the next round, one INSERT for all of them, as /v1/send's rounds do
 * (services/sending/deliveryScheduler.ts). Each project's stored messages gather into one
 * processing workflow for GATHER_MS or up to MAX_MESSAGES_PER_INBOUND_WORKFLOW messages, and it
 * is started then: one workflow per message, or per reception round, would hold processing to
 * the rate Temporal starts workflows, far below the rate messages are received (GATHER_MS).
 *
 * The 250 does not wait for the start: the stored row (with its workflow's id) is what makes the
 * message safe. A start that fails (Temporal away, the process killed in between) leaves the
 * rows RECEIVED, and the inbound sweep (inboundSweepWorkflow) starts them under the same id.
 */
export class InboundReception {
  private queue: PendingMessage[] = [];
  private writing = false;
  /** The gathering workflow of each project, while it takes messages. */
  private readonly open = new Map<string, Gathering>();
  /** Every gathering workflow not started yet. */
  private readonly unstarted = new Set<Gathering>();
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

  /** Starts the workflows still gathering, and waits for every start in progress (shutdown). */
  async drain(): Promise<void> {
    while (this.writing) await new Promise((r) => setTimeout(r, 20));
    for (const gathering of this.unstarted) this.close(gathering);
    this.startClosed();
    while (this.starts.size) await Promise.allSettled([...this.starts]);
  }

  private pump(): void {
    if (this.writing || !this.queue.length) return;
    const round = this.queue.splice(0, MAX_ROUND);
    this.writing = true;
    void this.flush(round).finally(() => {
      this.writing = false;
      this.startClosed();
      this.pump();
    });
  }

  /** The project's gathering workflow taking messages, a new one if none is. */
  private gatheringFor(projectId: string, firstMessageId: string): Gathering {
    const current = this.open.get(projectId);
    if (current) return current;
    const gathering: Gathering = {
      projectId,
      workflowId: inboundWorkflowId([firstMessageId]),
      joined: 0,
      messageIds: [],
      closed: false,
      timer: setTimeout(() => {
        this.close(gathering);
        // A round being written may hold some of its messages: the round's end starts it.
        if (!this.writing) this.startClosed();
      }, GATHER_MS),
    };
    this.open.set(projectId, gathering);
    this.unstarted.add(gathering);
    return gathering;
  }

  private close(gathering: Gathering): void {
    gathering.closed = true;
    clearTimeout(gathering.timer);
    if (this.open.get(gathering.projectId) === gathering) this.open.delete(gathering.projectId);
  }

  private async flush(round: PendingMessage[]): Promise<void> {
    const joined = round.map((pending) => {
      const gathering = this.gatheringFor(pending.projectId, pending.message.id);
      pending.message.workflowId = gathering.workflowId;
      if (++gathering.joined >= MAX_MESSAGES_PER_INBOUND_WORKFLOW) this.close(gathering);
      return gathering;
    });
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
    round.forEach((pending, i) => {
      const storedBefore = duplicates.get(pending.message.id);
      // A message stored before is processed by the workflow started for it then (or by the sweep).
      if (!storedBefore) joined[i].messageIds.push(pending.message.id);
      pending.resolve(storedBefore ? { id: storedBefore, duplicate: true } : { id: pending.message.id, duplicate: false });
    });
  }

  /** Starts the closed gathering workflows that hold stored messages; call it only between rounds. */
  private startClosed(): void {
    for (const gathering of [...this.unstarted]) {
      if (!gathering.closed) continue;
      this.unstarted.delete(gathering);
      if (!gathering.messageIds.length) continue;
      const starting = this.start(gathering);
      this.starts.add(starting);
      void starting.finally(() => this.starts.delete(starting));
    }
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
