import { Client, Connection } from '@temporalio/client';
import type { Config } from '../lib/config';
import { requireSetting } from '../lib/config';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  taskQueue: string;
  /**
   * Runs a call to Temporal with a deadline. Without one, a call made while Temporal is
   * unreachable waits for it indefinitely and so would the HTTP request behind it.
   */
  within<T>(fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/** How long an API request waits on Temporal before answering 503. */
export const TEMPORAL_CALL_TIMEOUT_MS = 5000;

/**
 * The API's Temporal client. The connection is lazy, so the API starts (and reports Temporal
 * as down on /health) even while Temporal is still starting or unreachable.
 */
export function createTemporalClient(config: Config): TemporalHandle {
  const connection = Connection.lazy({ address: requireSetting(config.temporalAddress, 'TEMPORAL_ADDRESS') });
  const client = new Client({ connection, namespace: config.temporalNamespace });
  return {
    client,
    connection,
    taskQueue: config.temporalTaskQueue,
    within: (fn, timeoutMs = TEMPORAL_CALL_TIMEOUT_MS) => connection.withDeadline(Date.now() + timeoutMs, fn),
    close: () => connection.close(),
  };
}

/** True when the frontend answers within the deadline; used by /health. */
export async function isTemporalReachable(handle: TemporalHandle, timeoutMs = 2000): Promise<boolean> {
  try {
    await handle.connection.withDeadline(Date.now() + timeoutMs, () =>
      handle.connection.workflowService.getSystemInfo({}),
    );
    return true;
  } catch {
    return false;
  }
}
