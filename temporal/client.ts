import { Client, Connection } from '@temporalio/client';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { temporalConnectionOptions, type TemporalConnectionOptions } from './connectionOptions';
import { CachedHealthCheck } from './healthCheck';
import { ensureNamespaceSetup } from './namespaceSetup';
import { retryUntilTemporalAnswers, Wakeup } from './waitForTemporal';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  taskQueue: string;
  namespace: string;
  /**
   * Runs a call to Temporal with a deadline. Without one, a call made while Temporal is
   * unreachable waits for it indefinitely and so would the HTTP request behind it.
   */
  within<T>(fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
  /**
   * Settles once the namespace and search attributes are in place: resolves, or rejects with a
   * TemporalSetupError the operator must act on. Rejects with TemporalNotReadyError if that
   * has not happened within `timeoutMs`.
   */
  ready(timeoutMs: number): Promise<void>;
  /** The start-up setup itself (rejects only with a TemporalSetupError); the API process stops on that. */
  setup: Promise<void>;
  /** Whether the frontend answers; cached for a second and answered within one (for /health). */
  isReachable(): Promise<boolean>;
  /** Whether the start-up setup is done: the namespace exists and maps every search attribute, so a workflow start can succeed. */
  isSetUp(): boolean;
  close(): Promise<void>;
}

/** How long an API request waits on Temporal before answering 503. */
export const TEMPORAL_CALL_TIMEOUT_MS = 5000;

/** Temporal has not answered since the API started (or its setup is still running). */
export class TemporalNotReadyError extends Error {}

/**
 * grpc-js waits 1 s after a failed connect and multiplies that by 1.6 up to 2 minutes, so after
 * a long outage the API could take that long to notice Temporal is back. Capping the pause at a
 * second lets it reconnect within a second or two (checked by test/temporal/startBeforeTemporal).
 */
export const RECONNECT_CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.min_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 1000,
} as const;

/** A `@temporalio/client` Connection to the configured Temporal, with TLS/API key and quick reconnects. */
export function createClientConnection(options: TemporalConnectionOptions, lazy = true): Connection | Promise<Connection> {
  const connectionOptions = { ...options, channelArgs: RECONNECT_CHANNEL_ARGS };
  return lazy ? Connection.lazy(connectionOptions) : Connection.connect(connectionOptions);
}

/**
 * The API's Temporal client. The connection is lazy and the namespace setup runs in the
 * background, retried until Temporal answers, so the API starts (and reports Temporal as down on
 * /health) even while Temporal is still starting or unreachable. Throws ConfigError at once
 * when the connection settings are wrong.
 */
export function createTemporalClient(config: Config, logger: Logger): TemporalHandle {
  const options = temporalConnectionOptions(config);
  const connection = createClientConnection(options) as Connection;
  const client = new Client({ connection, namespace: config.temporalNamespace });
  const within = <T>(fn: () => Promise<T>, timeoutMs = TEMPORAL_CALL_TIMEOUT_MS) => connection.withDeadline(Date.now() + timeoutMs, fn);

  // The setup and the health probe use a connection without the retry interceptor: while
  // Temporal is down their calls fail at once instead of retrying until their deadline.
  const directConnection = Connection.lazy({ ...options, channelArgs: RECONNECT_CHANNEL_ARGS, interceptors: [] });
  const closing = new AbortController();
  const wakeup = new Wakeup();
  let setupState: 'pending' | 'done' | 'failed' = 'pending';
  const setup = retryUntilTemporalAnswers(
    () =>
      ensureNamespaceSetup(directConnection, {
        namespace: config.temporalNamespace,
        createNamespace: config.temporalCreateNamespace,
        retentionDays: config.temporalNamespaceRetentionDays,
        logger,
      }),
    { address: options.address, logger, wakeup, signal: closing.signal },
  ).then(
    () => {
      setupState = 'done';
      logger.info({ event: 'temporal.ready', temporalAddress: options.address, namespace: config.temporalNamespace }, 'Temporal is ready');
    },
    (err) => {
      if (closing.signal.aborted) return; // closed while waiting: nothing failed
      setupState = 'failed';
      throw err;
    },
  );
  setup.catch(() => undefined); // reported through ready() and by the API process

  const health = new CachedHealthCheck(() => directConnection.withDeadline(Date.now() + 900, () => directConnection.workflowService.getSystemInfo({})));
  const isReachable = async () => {
    const up = await health.isHealthy();
    if (up && setupState === 'pending') wakeup.wake(); // Temporal is back: don't wait out the backoff
    return up;
  };

  return {
    client,
    connection,
    taskQueue: config.temporalTaskQueue,
    namespace: config.temporalNamespace,
    within,
    setup,
    isReachable,
    isSetUp: () => setupState === 'done',
    async ready(timeoutMs) {
      if (setupState === 'done') return;
      wakeup.wake();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TemporalNotReadyError(`Temporal at ${options.address} has not answered yet`)), timeoutMs);
      });
      try {
        await Promise.race([setup, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: async () => {
      closing.abort();
      await Promise.all([connection.close(), directConnection.close()]);
    },
  };
}
