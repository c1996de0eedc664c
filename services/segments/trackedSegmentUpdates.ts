import type { Orm } from '../../db/orm';
import type { EventTriggers } from '../events/eventTriggers';
import { reconcileTrackedSegment } from '../../db/segments/segmentMembership';
import { asTracked, segmentRepository } from '../../db/segments/segmentRepository';

interface Logger {
  error(obj: object, msg: string): void;
}

/** How long changes gather before they are evaluated, and how many contacts one statement takes. */
const GATHER_MS = 200;
const BATCH = 500;

/**
 * Keeps tracked segments current as contacts change (contract section 10: "within seconds"):
 * every committed event (track, subscription flips, email activity, segment entry/exit) and every
 * contact data write names contacts; those contacts are re-evaluated against each tracked segment
 * of their project, and the ones that joined or left get segment.<slug>.entry / .exit events.
 *
 * Listeners return at once (a /v1/track does not wait for segments): contact ids gather for
 * GATHER_MS, then one flush at a time evaluates them per project, BATCH contacts per statement,
 * with the same compiler as everything else (reconcileTrackedSegment). The emitted events go back
 * through the triggers, so segments that refer to tracked segments follow; a second pass finds
 * nothing more to change, which ends the chain. Time-based conditions ("within 7 days") drift
 * without any change: the recompute schedule catches those.
 */
export class TrackedSegmentUpdates {
  private pending = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;
  private readonly unsubscribe: Array<() => void>;

  constructor(
    private readonly orm: Orm,
    private readonly triggers: EventTriggers,
    private readonly logger: Logger,
  ) {
    this.unsubscribe = [
      triggers.subscribe(async ({ projectId, events }) =>
        this.enqueue(
          projectId,
          events.map((e) => e.contactId),
        ),
      ),
      triggers.subscribeContactChanges(async ({ projectId, contactIds }) => this.enqueue(projectId, contactIds)),
    ];
  }

  enqueue(projectId: string, contactIds: Array<string | null | undefined>): void {
    if (this.closed) return;
    let set = this.pending.get(projectId);
    for (const id of contactIds) {
      if (!id) continue;
      if (!set) this.pending.set(projectId, (set = new Set()));
      set.add(id);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.flushing || !this.pending.size || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flush()
        .catch((err: unknown) => this.logger.error({ err }, 'tracked segments: update failed'))
        .finally(() => {
          this.flushing = undefined;
          this.schedule();
        });
    }, GATHER_MS);
    this.timer.unref();
  }

  private async flush(): Promise<void> {
    const work = this.pending;
    this.pending = new Map();
    for (const [projectId, ids] of work) {
      if (this.closed) return;
      const em = this.orm.em.fork();
      const segments = await segmentRepository.listTracked(em, projectId);
      if (!segments.length) continue;
      const all = [...ids];
      for (let i = 0; i < all.length; i += BATCH) {
        const batch = all.slice(i, i + BATCH);
        for (const listed of segments) {
          try {
            // The segment is read again under a share lock, in the transaction that moves its
            // members: a condition change (PATCH, which updates the row and moves every member in
            // one transaction) either waits for this batch, then corrects it, or has committed, and
            // this batch uses its new condition. Reconciling with the condition listed above could
            // re-add members the change just moved out.
            const result = await em.transactional(async (tx) => {
              const segment = await segmentRepository.lockTracked(tx, listed.id);
              return segment ? reconcileTrackedSegment(tx, asTracked(segment), { kind: 'contacts', ids: batch }, { emitEvents: true }) : null;
            });
            if (result?.events.length) await this.triggers.afterEventsRecorded(projectId, result.events);
          } catch (err) {
            this.logger.error({ err, projectId, segmentId: listed.id }, 'tracked segments: could not update members');
          }
        }
      }
    }
  }

  /** Stops listening and waits for the flush under way; changes still gathering are left to the schedule. */
  async close(): Promise<void> {
    this.closed = true;
    for (const off of this.unsubscribe) off();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
  }
}

const attached = new WeakMap<EventTriggers, TrackedSegmentUpdates>();

/** One updater per trigger point (tests share one between the API and the worker). */
export function attachTrackedSegmentUpdates(orm: Orm, triggers: EventTriggers, logger: Logger): { close(): Promise<void> } {
  const existing = attached.get(triggers);
  if (existing) return { close: async () => undefined };
  const updates = new TrackedSegmentUpdates(orm, triggers, logger);
  attached.set(triggers, updates);
  return {
    close: async () => {
      attached.delete(triggers);
      await updates.close();
    },
  };
}
