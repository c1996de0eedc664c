import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import type { Config } from '../lib/config';
import { requireSetting } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createOrm, type Orm } from '../db/orm';
import { createTemporalClient, type TemporalHandle } from '../temporal/client';
import { createApp } from './app';
import { trackConnections } from './httpDrain';
import { SenderDomainLookup, mailModeOf } from '../services/domains/senderDomainLookup';
import { CapUsageLookup } from '../services/billing/capUsageLookup';
import { createEventTriggers, type EventTriggers } from '../services/events/eventTriggers';
import { ContactWriteBatcher } from '../services/contacts/contactWriteBatcher';
import { DeliveryScheduler } from '../services/sending/deliveryScheduler';
import { ApiKeyResolver } from '../db/repositories/apiKeyResolver';
import { attachTrackedSegmentUpdates } from '../services/segments/trackedSegmentUpdates';
import { attachExecutionTriggers } from '../services/automation/executionTriggers';
import type { SnsFetcher } from '../mail/sns/snsFetcher';
import { createObjectStore } from '../lib/objectStorage/createObjectStore';
import { removeAbandonedUploadTemporaries } from '../services/retention/temporaryFiles';
import type { ApiDeps, AppState } from './state';
import { configuredSmtpPorts, startSmtpListeners, type RunningSmtpListeners, type SmtpListenerPorts, type SmtpListenerStatus } from './smtp';
import { InboundRecipients } from '../services/inbound/inboundRecipients';
import { InboundReception } from '../services/inbound/inboundReception';
import { RequestLogWriter } from '../services/requestLog/requestLogWriter';

export interface RunningApi {
  server: http.Server;
  /** The Koa application it serves (its mounted routers, for the API description's completeness test). */
  app: Koa<AppState>;
  port: number;
  url: string;
  orm: Orm;
  temporal: TemporalHandle;
  eventTriggers: EventTriggers;
  /** The SMTP roles it runs (contract 20), each null when off. */
  smtp: RunningSmtpListeners;
  /** The project request log's writer (tests flush it rather than wait a second). */
  requestLog: RequestLogWriter;
  /**
   * Closes the SMTP listeners (sessions in progress get their reply), stops accepting connections,
   * answers the requests it accepted (up to API_SHUTDOWN_GRACE_MS), then closes pools. With
   * `noticeMs` (API_SHUTDOWN_NOTICE_MS, on SIGTERM) it first goes on listening for HTTP that long
   * with /health at 503, so load balancers stop sending before it refuses.
   */
  close(options?: { noticeMs?: number }): Promise<void>;
}

export async function startApiServer(
  config: Config,
  logger: Logger,
  options: {
    host?: string;
    eventTriggers?: EventTriggers;
    snsFetch?: SnsFetcher;
    /** SMTP roles to start over what config asks for (tests: `{ submission: 0 }` for a free port). */
    smtpPorts?: Partial<SmtpListenerPorts>;
  } = {},
): Promise<RunningApi> {
  const orm = await createOrm(requireSetting(config.databaseUrl, 'DATABASE_URL'), {}, logger);
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
    { maxBatch: config.deliveryBatchMax },
  );
  const objectStore = createObjectStore(config);
  // In the background: a large uploads directory does not hold up the start.
  const temporariesRemoved = removeAbandonedUploadTemporaries(objectStore, config.retention, logger);
  const server = http.createServer();
  // Slightly above common load-balancer idle timeouts, so the balancer closes idle sockets first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  // Connections and requests in progress, for close()'s drain and /health's 503 while it runs
  // (api/httpDrain.ts; its request listener goes before the app's, wherever this stands).
  const connections = trackConnections(server);
  // Which SMTP roles listen, for GET /config; set once each listener is up.
  const smtpStatus: SmtpListenerStatus = { inbound: false, submission: false, submissionPort: null };
  const inboundReception = new InboundReception({ orm, temporal, logger });
  // One per process, read by the send path and by the inbound listener's RCPT (the `inbound` cap).
  const capUsage = new CapUsageLookup(orm);
  // The project request log (GET /requests), written in batches off the request path.
  const requestLog = new RequestLogWriter(orm, logger);
  const deps: ApiDeps = {
    config,
    orm,
    temporal,
    logger,
    eventTriggers,
    contactWrites: new ContactWriteBatcher(orm),
    apiKeys: new ApiKeyResolver(orm),
    senderDomains: new SenderDomainLookup(orm, mailModeOf(config)),
    capUsage,
    deliveries,
    snsFetch: options.snsFetch,
    inbound: { recipients: new InboundRecipients(orm, config.smtpListeners, capUsage), reception: inboundReception },
    objectStore,
    isDraining: connections.isDraining,
    smtpStatus,
    requestLog,
  };
  const app = createApp(deps);
  const handleRequest = app.callback();
  // Koa settles every request itself (its error handling answers, ctx.onerror logs): the promise
  // it returns per request never rejects, and nothing waits for it.
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void handleRequest(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let smtp: RunningSmtpListeners;
  try {
    smtp = await startSmtpListeners(deps, { ...configuredSmtpPorts(config), ...options.smtpPorts }, smtpStatus);
  } catch (err) {
    server.close();
    await orm.close();
    await temporal.close();
    throw err;
  }

  let closing: Promise<void> | undefined;
  const close = (closeOptions: { noticeMs?: number } = {}) =>
    (closing ??= (async () => {
      // SMTP first: a message accepted there needs the database and Temporal until its reply.
      await smtp.close();
      const { forced } = await connections.drain(config.apiShutdownGraceMs, closeOptions.noticeMs ?? 0);
      if (forced > 0) logger.warn({ graceMs: config.apiShutdownGraceMs, connections: forced }, 'shutdown grace period over: closed connections still open');
      // Every message was answered above (its 250 or 200 once stored): the processing workflows
      // still gathering start now, and every start ends, before the Temporal client closes.
      await inboundReception.drain();
      // Likewise the delivery workflows of the sends answered above (what is left, the sweep starts).
      await deliveries.drain();
      await segmentUpdates.close();
      await executionTriggers.close();
      // The answered requests' rows still buffered.
      await requestLog.close();
      // Only now: the requests answered above needed the database and Temporal until their last byte.
      await orm.close();
      await temporal.close();
      await temporariesRemoved;
      objectStore.close();
    })());

  return { server, app, port, url: `http://127.0.0.1:${port}`, orm, temporal, eventTriggers, smtp, requestLog, close };
}
