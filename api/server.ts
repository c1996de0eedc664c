import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../lib/config';
import { requireSetting } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createOrm, type Orm } from '../db/orm';
import { createTemporalClient, type TemporalHandle } from '../temporal/client';
import { createApp } from './app';
import { trackConnections } from './httpDrain';
import { SenderDomainLookup } from '../services/domains/senderDomainLookup';
import { CapUsageLookup } from '../services/billing/capUsageLookup';
import { createEventTriggers, type EventTriggers } from '../db/events/eventTriggers';
import { ContactWriteBatcher } from '../services/contacts/contactWriteBatcher';
import { DeliveryScheduler } from '../services/sending/deliveryScheduler';
import { ApiKeyResolver } from '../db/repositories/apiKeyResolver';
import { attachTrackedSegmentUpdates } from '../db/segments/trackedSegmentUpdates';
import { attachExecutionTriggers } from '../services/automation/executionTriggers';
import type { SnsFetcher } from '../mail/sns/snsFetcher';
import { createObjectStore } from '../lib/objectStorage/createObjectStore';

export interface RunningApi {
  server: http.Server;
  port: number;
  url: string;
  orm: Orm;
  temporal: TemporalHandle;
  eventTriggers: EventTriggers;
  /** Stops accepting connections, answers the requests it accepted (up to API_SHUTDOWN_GRACE_MS), then closes pools. */
  close(): Promise<void>;
}

export async function startApiServer(
  config: Config,
  logger: Logger,
  options: { host?: string; eventTriggers?: EventTriggers; snsFetch?: SnsFetcher } = {},
): Promise<RunningApi> {
  const orm = await createOrm(requireSetting(config.databaseUrl, 'DATABASE_URL'));
  const temporal = createTemporalClient(config, logger);
  const eventTriggers = options.eventTriggers ?? createEventTriggers(logger);
  const segmentUpdates = attachTrackedSegmentUpdates(orm, eventTriggers, logger);
  const executionTriggers = attachExecutionTriggers(
    orm,
    eventTriggers,
    { client: temporal.client, taskQueue: temporal.taskQueue, within: (fn) => temporal.within(fn) },
    logger,
  );
  const deliveries = new DeliveryScheduler(
    { orm, temporal, logger, retryDelaysSeconds: config.deliveryRetryDelaysSeconds },
    // One round in flight: sends arriving meanwhile form the next round, so under load rounds
    // grow and each carries more mail per delivery workflow (bench:send: 16 emails per workflow
    // and 300 accepted/s with one round in flight, 7 and 277/s with four).
    { maxBatch: config.deliveryBatchMax, maxInFlight: 1 },
  );
  const objectStore = createObjectStore(config);
  const app = createApp({
    config,
    orm,
    temporal,
    logger,
    eventTriggers,
    contactWrites: new ContactWriteBatcher(orm),
    apiKeys: new ApiKeyResolver(orm),
    senderDomains: new SenderDomainLookup(orm),
    capUsage: new CapUsageLookup(orm),
    deliveries,
    snsFetch: options.snsFetch,
    objectStore,
  });
  const handleRequest = app.callback();
  // Koa settles every request itself (its error handling answers, ctx.onerror logs): the promise
  // it returns per request never rejects, and nothing waits for it.
  const server = http.createServer((req, res) => void handleRequest(req, res));
  // Slightly above common load-balancer idle timeouts, so the balancer closes idle sockets first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  const connections = trackConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const { forced } = await connections.drain(config.apiShutdownGraceMs);
      if (forced > 0) logger.warn({ graceMs: config.apiShutdownGraceMs, connections: forced }, 'shutdown grace period over: closed connections still open');
      await segmentUpdates.close();
      await executionTriggers.close();
      // Only now: the requests answered above needed the database and Temporal until their last byte.
      await orm.close();
      await temporal.close();
      objectStore.close();
    })());

  return { server, port, url: `http://127.0.0.1:${port}`, orm, temporal, eventTriggers, close };
}
