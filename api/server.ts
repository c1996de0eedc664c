import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../lib/config';
import { requireSetting } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createOrm, type Orm } from '../db/orm';
import { createTemporalClient, type TemporalHandle } from '../temporal-config/client';
import { createApp } from './app';
import { createEventTriggers, type EventTriggers } from '../db/events/eventTriggers';
import { ContactWriteBatcher } from '../db/contacts/contactWriteBatcher';
import { ApiKeyResolver } from '../db/repositories/apiKeyResolver';

export interface RunningApi {
  server: http.Server;
  port: number;
  url: string;
  orm: Orm;
  temporal: TemporalHandle;
  eventTriggers: EventTriggers;
  /** Stops accepting connections, lets in-flight requests finish (up to the timeout), then closes pools. */
  close(): Promise<void>;
}

export async function startApiServer(
  config: Config,
  logger: Logger,
  options: { host?: string; eventTriggers?: EventTriggers } = {},
): Promise<RunningApi> {
  const orm = await createOrm(requireSetting(config.databaseUrl, 'DATABASE_URL'));
  const temporal = createTemporalClient(config, logger);
  const eventTriggers = options.eventTriggers ?? createEventTriggers(logger);
  const app = createApp({ config, orm, temporal, logger, eventTriggers, contactWrites: new ContactWriteBatcher(orm), apiKeys: new ApiKeyResolver(orm) });
  const server = http.createServer(app.callback());
  // Slightly above common load-balancer idle timeouts, so the balancer closes idle sockets first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle keep-alive sockets would hold close() open; busy ones finish their request first.
      server.closeIdleConnections();
      const timer = setTimeout(() => {
        logger.warn({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timeout: closing remaining connections');
        server.closeAllConnections();
      }, config.shutdownTimeoutMs);
      await drained;
      clearTimeout(timer);
      await orm.close();
      await temporal.close();
    })());

  return { server, port, url: `http://127.0.0.1:${port}`, orm, temporal, eventTriggers, close };
}
