import type { Orm } from '../../db/orm';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { openWithSecret } from '../../lib/crypto';
import { dnsResolverFromConfig, type DnsResolver } from '../../lib/dns/dnsResolver';
import { createWebhookConnections, sendWebhook, WebhookError, type WebhookConnections } from '../../lib/webhooks/webhookRequest';
import { standardWebhookHeaders } from '../../lib/webhooks/standardWebhookSignature';
import { webhookEndpointRepository, type WebhookEndpointRow } from '../../db/webhooks/webhookEndpointRepository';
import {
  webhookMessageRepository,
  type ClaimedWebhookMessage,
  type FinishedWebhookAttempt,
  type WebhookAttempt,
} from '../../db/webhooks/webhookMessageRepository';

/**
 * How far a claimed message's lease (`leased_until`) reaches while its attempt runs: past the
 * attempt's own bound (WEBHOOK_ATTEMPT_TIMEOUT_MS, 15 s by default), so no attempt under way is claimed twice.
 */
function leaseSeconds(config: Config): number {
  return Math.max(30, Math.ceil(config.webhooks.attemptTimeoutMs / 1000) + 15);
}
/** A run returns after this long, so the workflow's history moves on and a run never nears its timeout. */
const RUN_FOR_MS = 4 * 60_000;
/** With nothing due, a run waits this long for news before it hands back to the workflow's timer. */
const LINGER_MS = 10_000;
/** How long a run waits for more attempts to end before refilling a few free slots. */
const GATHER_MS = 5;
/** A changed url, secret or state is picked up within this long. */
const ENDPOINT_REFRESH_MS = 1000;

export const WEBHOOK_SECRET_PURPOSE = 'webhook-endpoint-secret';
export const WEBHOOK_USER_AGENT = 'Mailroom-Webhooks/1';

/** A delivery run of this process waiting for news of its endpoint. */
export interface LocalDeliveryRun {
  /** Resolves after `ms`, or sooner when poked. */
  wait(ms: number): Promise<void>;
  /** Ends a wait now (a message came due, an attempt finished). */
  poke(): void;
  close(): void;
}

/** Where a process's delivery runs register, to be poked when their endpoint's messages come due (webhookWakeups.ts). */
export interface DeliveryRunRegistry {
  register(endpointId: string): LocalDeliveryRun;
}

export type DeliveryRunResult =
  | { state: 'deleted' }
  | { state: 'disabled' }
  /** Stopped while there was still work: the workflow runs again at once. */
  | { state: 'busy' }
  /** Nothing due now: the next pending message is due then (null: none pending). */
  | { state: 'idle'; nextAttemptAt: string | null };

export interface DeliveryRunDeps {
  config: Config;
  orm: Orm;
  logger: Logger;
  /** This process's registry of runs, poked when the endpoint's messages come due. */
  register(endpointId: string): LocalDeliveryRun;
  /** Called often; Temporal's heartbeat. */
  heartbeat(): void;
  /**
   * Waits while more important work has the cores (a low-priority webhook process, see
   * lib/process/cpuStarvation.ts), before each claim; absent where delivery shares a process with mail.
   */
  yieldToMail?: () => Promise<unknown>;
  /** Aborted when the workflow is cancelled (the endpoint deleted or disabled). */
  cancelled: AbortSignal;
}

const resolvers = new WeakMap<Config, DnsResolver>();
function resolverFor(config: Config): DnsResolver {
  let resolver = resolvers.get(config);
  if (!resolver) resolvers.set(config, (resolver = dnsResolverFromConfig(config)));
  return resolver;
}

/** The secrets that sign now: the current one, and the one before a rotation for 24 h after it. */
export function signingSecrets(config: Config, endpoint: WebhookEndpointRow, now = new Date()): string[] {
  const secrets = [openWithSecret(config.secret, WEBHOOK_SECRET_PURPOSE, endpoint.id, endpoint.secretSealed)];
  if (endpoint.previousSecretSealed && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) {
    secrets.push(openWithSecret(config.secret, WEBHOOK_SECRET_PURPOSE, endpoint.id, endpoint.previousSecretSealed));
  }
  return secrets;
}

/**
 * One run of an endpoint's delivery (contract 18): claims the due messages, at most
 * WEBHOOK_ENDPOINT_CONCURRENCY in flight, sends each signed the Standard Webhooks way, and records
 * every attempt: a 2xx succeeds; anything else is retried after WEBHOOK_RETRY_DELAYS_SECONDS, and
 * FAILED when none is left; 410 Gone disables the endpoint, as do WEBHOOK_DISABLE_AFTER_HOURS of
 * nothing but failures. Each claim is a lease (`leased_until`), so an attempt cut short by a killed
 * worker is made again once the lease ends: at least once, never lost.
 *
 * The database work is batched: the attempts that ended are recorded in one statement, and free
 * slots are refilled in one claim (after a few milliseconds' wait while fewer than half are free),
 * so a busy endpoint costs a fraction of a round trip per message rather than two. Successes of a
 * healthy endpoint are recorded in the claim's own statement: a message then costs one round trip
 * even when they end one at a time (a lightly loaded endpoint).
 */
export async function runWebhookDelivery(deps: DeliveryRunDeps, endpointId: string): Promise<DeliveryRunResult> {
  const { config, orm } = deps;
  const em = orm.em.fork();
  const cap = config.webhooks.endpointConcurrency;
  const refillAt = Math.max(1, Math.ceil(cap / 2));
  const startedAt = Date.now();
  const local = deps.register(endpointId);
  // A cancellation (the endpoint deleted or disabled, the worker stopping) ends any wait at once.
  const onCancel = () => local.poke();
  deps.cancelled.addEventListener('abort', onCancel);
  const inFlight = new Set<Promise<void>>();
  // The run's requests share kept-alive connections to the receiver: a connection per request
  // cost the worker and the receiver a handshake each (docs/benchmarks.md, "Outbound webhooks").
  const connections = createWebhookConnections(cap);
  const finished: FinishedWebhookAttempt[] = [];
  let endpoint: WebhookEndpointRow | null = null;
  let secrets: string[] = [];
  let refreshedAt = 0;
  let stoppedBy: 'deleted' | 'disabled' | null = null;
  let idleSince: number | null = null;
  let gathered = false;

  const refresh = async () => {
    endpoint = await webhookEndpointRepository.findById(em, endpointId);
    refreshedAt = Date.now();
    if (!endpoint) stoppedBy = 'deleted';
    else if (!endpoint.enabled) stoppedBy = 'disabled';
    else secrets = signingSecrets(config, endpoint);
  };

  /**
   * Whether what ended can wait to be recorded with the next claim: successes only, of an endpoint
   * not failing, so there is no health to record and nothing that could stop the run.
   */
  const recordableWithClaim = () => endpoint !== null && !endpoint.failingSince && finished.every((f) => f.succeeded);

  /** Records what ended since the last time, and the endpoint's health from it. */
  const flush = async () => {
    if (!finished.length) return;
    const batch = finished.splice(0, finished.length);
    await webhookMessageRepository.recordAttempts(em, batch);
    const current = endpoint;
    if (!current) return;
    if (batch.some((f) => f.attempt.statusCode === 410)) {
      await webhookEndpointRepository.disable(em, current.id, 'The endpoint answered 410 Gone');
      stoppedBy = 'disabled';
      return;
    }
    const last = batch.at(-1)!;
    if (last.succeeded) {
      if (current.failingSince) {
        await webhookEndpointRepository.recordSuccess(em, current.id);
        current.failingSince = null;
      }
    } else if (batch.some((f) => f.succeeded)) {
      // Mixed: it answers, so the failure clock stops.
      if (current.failingSince) await webhookEndpointRepository.recordSuccess(em, current.id);
      current.failingSince = null;
    } else {
      const { disabled, failingSince } = await webhookEndpointRepository.recordFailure(em, current.id, config.webhooks.disableAfterHours);
      if (disabled) stoppedBy = 'disabled';
      current.failingSince = failingSince ?? current.failingSince ?? new Date();
    }
  };

  try {
    while (!deps.cancelled.aborted && stoppedBy === null) {
      deps.heartbeat();
      if (!recordableWithClaim()) await flush();
      if (Date.now() - refreshedAt >= ENDPOINT_REFRESH_MS) await refresh();
      if (stoppedBy !== null) break;
      if (Date.now() - startedAt >= RUN_FOR_MS) break;

      // A few slots free while others are busy: a moment more gathers the attempts about to end, so
      // one claim refills several slots (a fast receiver's answers come back a millisecond apart).
      if (cap - inFlight.size < refillAt && inFlight.size > 0 && !gathered) {
        gathered = true;
        await local.wait(GATHER_MS);
        continue;
      }
      gathered = false;
      if (deps.yieldToMail) await deps.yieldToMail();
      const free = cap - inFlight.size;
      // A failure that ended meanwhile is recorded with the endpoint's health first; successes go with the claim.
      if (!recordableWithClaim()) await flush();
      if (stoppedBy !== null) break;
      const ended = recordableWithClaim() ? finished.splice(0, finished.length) : [];
      const claimed =
        free > 0
          ? await webhookMessageRepository.recordAttemptsAndClaimDue(em, ended, { endpointId, limit: free, leaseSeconds: leaseSeconds(config) })
          : (await webhookMessageRepository.recordAttempts(em, ended), []);
      // Changed since it was read (a rotated secret, a new url): read it again before sending.
      if (claimed.some((message) => message.endpointVersion !== endpoint?.version)) {
        await refresh();
        if (stoppedBy !== null) break;
      }
      for (const message of claimed) {
        const attempt = attemptOne(deps, endpoint!, secrets, message, connections).then(
          (outcome) => void finished.push(outcome),
          (err) => deps.logger.error({ err, endpointId, messageId: message.id }, 'webhook attempt failed unexpectedly; its lease makes it due again'),
        );
        const tracked = attempt.finally(() => {
          inFlight.delete(tracked);
          local.poke();
        });
        inFlight.add(tracked);
      }
      if (claimed.length && claimed.length === free) continue;

      if (inFlight.size > 0) {
        idleSince = null;
        // An attempt finishing or news of the endpoint ends the wait.
        await local.wait(5000);
        continue;
      }
      if (claimed.length || finished.length) continue;
      idleSince ??= Date.now();
      const next = await webhookMessageRepository.nextDueAt(em, endpointId);
      const dueInMs = next ? next.getTime() - Date.now() : Infinity;
      const lingerLeft = LINGER_MS - (Date.now() - idleSince);
      if (dueInMs > 0 && lingerLeft <= 0) {
        // Hand back to the workflow's timer. Closing first, then looking once more: a message that
        // came due after the look is notified to nobody here, so the process signals the workflow.
        local.close();
        const last = await webhookMessageRepository.nextDueAt(em, endpointId);
        if (last && last.getTime() <= Date.now()) return { state: 'busy' };
        return { state: 'idle', nextAttemptAt: last ? last.toISOString() : null };
      }
      // Due but not claimable (another run's lease, the endpoint just disabled): look again shortly.
      await local.wait(dueInMs > 0 ? Math.min(dueInMs, lingerLeft, 5000) : 200);
    }
    // The attempts under way end (each is bounded by its timeout) and are recorded before the run returns;
    // the run heartbeats meanwhile, as a timeout may be longer than the activity's heartbeat timeout.
    while (inFlight.size > 0) {
      deps.heartbeat();
      await local.wait(5000);
    }
    await flush();
    const stopped: 'deleted' | 'disabled' | null = stoppedBy;
    return stopped === 'deleted' ? { state: 'deleted' } : stopped === 'disabled' ? { state: 'disabled' } : { state: 'busy' };
  } finally {
    deps.cancelled.removeEventListener('abort', onCancel);
    local.close();
    connections.close();
  }
}

/** One attempt of one message; its outcome is recorded by the run with the others that ended meanwhile. */
async function attemptOne(
  deps: DeliveryRunDeps,
  endpoint: WebhookEndpointRow,
  secrets: string[],
  message: ClaimedWebhookMessage,
  connections: WebhookConnections,
): Promise<FinishedWebhookAttempt> {
  const { config } = deps;
  const at = new Date();
  const timestamp = Math.floor(at.getTime() / 1000);
  let statusCode: number | null = null;
  let error: string | null = null;
  let durationMs = 0;
  try {
    const answer = await sendWebhook({
      url: endpoint.url,
      method: 'POST',
      headers: {
        ...standardWebhookHeaders(secrets, message.id, timestamp, message.body),
        'content-type': 'application/json',
        'user-agent': WEBHOOK_USER_AGENT,
      },
      body: message.body,
      // Contract 18: a 2xx within this long (WEBHOOK_ATTEMPT_TIMEOUT_MS) succeeds.
      timeoutMs: config.webhooks.attemptTimeoutMs,
      resolver: resolverFor(config),
      allowPrivate: config.webhookAllowPrivate,
      allowedNetworks: config.webhookAllowedNetworks,
      connections,
    });
    statusCode = answer.status;
    durationMs = answer.durationMs;
  } catch (err) {
    if (!(err instanceof WebhookError)) throw err;
    statusCode = err.status ?? null;
    durationMs = err.durationMs ?? Date.now() - at.getTime();
    error = err.message;
  }
  const attempt: WebhookAttempt = { at: at.toISOString(), statusCode, durationMs: Math.round(durationMs), error };
  if (error === null) return { messageId: message.id, attempt, succeeded: true, retryAfterSeconds: null };
  const delays = config.webhooks.retryDelaysSeconds;
  const retryAfterSeconds = message.attemptCount < delays.length ? delays[message.attemptCount] : null;
  return { messageId: message.id, attempt, succeeded: false, retryAfterSeconds };
}
