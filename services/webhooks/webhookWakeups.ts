import type { Client } from '@temporalio/client';
import type { Orm } from '../../db/orm';
import type { Logger } from '../../lib/logger';
import { listenForDueWebhooks, type WebhookDueListener, type WebhookDueNotice } from '../../db/webhooks/webhookDueNotifications';
import { webhookEndpointRepository } from '../../db/webhooks/webhookEndpointRepository';
import { wakeWebhookDelivery } from '../../temporal/webhookDeliveryStart';
import type { DeliveryRunRegistry, LocalDeliveryRun } from './webhookDelivery';

/** At most one signal per endpoint per process in this long; what arrives meanwhile rides on one more at its end. */
const SIGNAL_SPACING_MS = 1000;
/**
 * The sweep: endpoints with due messages, looked for this often. New messages are found this way
 * (inserting them notifies no one: a notifying transaction holds PostgreSQL's one notification
 * lock through its commit, so every event of a project with an endpoint would commit in turn), as
 * are messages a missed notification or a restarted worker left due. A message waits at most this
 * long for its first attempt, plus the signal's spacing when its delivery runs in another process.
 */
const SWEEP_EVERY_MS = 500;
const SWEEP_BATCH = 1000;

/**
 * How an endpoint's delivery hears that messages came due, in the worker process. A sweep every
 * 500 ms (and at start, and after every reconnection of the listener) finds the endpoints with
 * messages due; a retry by hand and an endpoint enabled again also notify at once
 * (db/webhooks/webhookDueNotifications.ts). A delivery run of this process for that endpoint is
 * poked directly, and otherwise the endpoint's workflow is signalled (started when none runs),
 * spaced per endpoint so a busy project's events cost one signal a second at most.
 */
export class WebhookWakeups implements DeliveryRunRegistry {
  private readonly runs = new Map<string, Set<() => void>>();
  private readonly lastSignalAt = new Map<string, number>();
  private readonly deferred = new Map<string, NodeJS.Timeout>();
  private listener?: WebhookDueListener;
  private sweepTimer?: NodeJS.Timeout;
  private closed = false;
  private sweeping = false;
  private sweepFailing = false;

  constructor(private readonly deps: { orm: Orm; client: Client; taskQueue: string; logger: Logger }) {}

  /** Starts listening (needs the database URL); without it, runs are still registered and poked locally. */
  listen(databaseUrl: string): void {
    this.listener = listenForDueWebhooks(databaseUrl, {
      onDue: (notice) => this.onDue(notice),
      onConnected: () => void this.sweep(),
      onError: (err) => this.deps.logger.warn({ err }, 'webhook notifications: connection lost, reconnecting'),
    });
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweepTimer.unref();
  }

  /** A delivery run of this process for `endpointId`, poked when its messages come due. */
  register(endpointId: string): LocalDeliveryRun {
    let wake: (() => void) | undefined;
    let pending = false;
    const poke = () => {
      if (wake) wake();
      else pending = true;
    };
    let set = this.runs.get(endpointId);
    if (!set) this.runs.set(endpointId, (set = new Set()));
    set.add(poke);
    return {
      wait: (ms) => {
        if (pending) {
          pending = false;
          return Promise.resolve();
        }
        return new Promise<void>((resolve) => {
          const timer = setTimeout(done, ms);
          // Never what keeps a stopping process alive.
          timer.unref();
          function done() {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          }
          wake = done;
        });
      },
      poke,
      close: () => {
        const current = this.runs.get(endpointId);
        current?.delete(poke);
        if (current?.size === 0) this.runs.delete(endpointId);
        wake?.();
      },
    };
  }

  onDue(notice: WebhookDueNotice): void {
    if (this.closed) return;
    const local = this.runs.get(notice.endpointId);
    if (local?.size) {
      for (const poke of local) poke();
      return;
    }
    const since = Date.now() - (this.lastSignalAt.get(notice.endpointId) ?? 0);
    if (since >= SIGNAL_SPACING_MS) {
      void this.signal(notice);
      return;
    }
    if (this.deferred.has(notice.endpointId)) return;
    const timer = setTimeout(() => {
      this.deferred.delete(notice.endpointId);
      // A run of this process may have started meanwhile and sees the messages itself.
      if (!this.runs.get(notice.endpointId)?.size) void this.signal(notice);
    }, SIGNAL_SPACING_MS - since);
    timer.unref();
    this.deferred.set(notice.endpointId, timer);
  }

  private async signal(notice: WebhookDueNotice): Promise<void> {
    this.lastSignalAt.set(notice.endpointId, Date.now());
    if (this.lastSignalAt.size > 10_000) this.lastSignalAt.clear();
    try {
      await wakeWebhookDelivery(this.deps.client, this.deps.taskQueue, notice);
    } catch (err) {
      // The sweep wakes it later.
      this.deps.logger.warn({ err, endpointId: notice.endpointId }, 'could not wake webhook delivery');
    }
  }

  async sweep(): Promise<void> {
    // One at a time: a slow database must not pile sweeps up.
    if (this.closed || this.sweeping) return;
    this.sweeping = true;
    try {
      const due = await webhookEndpointRepository.withDueMessages(this.deps.orm.em.fork(), SWEEP_BATCH);
      // A run of this process is poked; otherwise the endpoint's workflow is signalled, spaced.
      for (const endpoint of due) this.onDue({ endpointId: endpoint.id, projectId: endpoint.projectId });
      this.sweepFailing = false;
    } catch (err) {
      // Said once per outage, not twice a second.
      if (!this.sweepFailing) this.deps.logger.warn({ err }, 'webhook delivery sweep failed; the next ones try again');
      this.sweepFailing = true;
    } finally {
      this.sweeping = false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const timer of this.deferred.values()) clearTimeout(timer);
    await this.listener?.close();
  }
}

export function createWebhookWakeups(deps: { orm: Orm; client: Client; taskQueue: string; logger: Logger }): WebhookWakeups {
  return new WebhookWakeups(deps);
}
