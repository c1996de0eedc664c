import { Client } from 'pg';

export interface WebhookDueNotice {
  endpointId: string;
  projectId: string;
}

export interface WebhookDueListener {
  close(): Promise<void>;
}

/** The channel the repositories notify on a retry by hand and an endpoint enabled again (inserts no longer do: Migration20261202010000WebhookInsertNotifyDropped). */
const CHANNEL = 'mailroom_webhook_due';
const NOTICE = /^([0-9a-f-]{36}):([0-9a-f-]{36})$/;

/**
 * LISTENs on a connection of its own for messages that became due by a user's action (retried by
 * hand, an endpoint re-enabled) and hands each endpoint to `onDue`. Notifications are sent at commit and
 * only to connected listeners, so after every (re)connection `onConnected` runs: the caller looks
 * for what came due while nobody listened. A lost connection is retried with backoff until closed.
 */
export function listenForDueWebhooks(
  databaseUrl: string,
  handlers: { onDue: (notice: WebhookDueNotice) => void; onConnected: () => void; onError: (err: unknown) => void },
): WebhookDueListener {
  let closed = false;
  let client: Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let delayMs = 500;

  const connect = async () => {
    if (closed) return;
    const next = new Client({ connectionString: databaseUrl, application_name: 'mailroom-webhook-wakeups' });
    next.on('notification', (message) => {
      const match = message.channel === CHANNEL && message.payload ? NOTICE.exec(message.payload) : null;
      if (match) handlers.onDue({ endpointId: match[1], projectId: match[2] });
    });
    next.on('error', (err) => {
      handlers.onError(err);
      reconnectLater(next);
    });
    next.on('end', () => reconnectLater(next));
    try {
      await next.connect();
      await next.query(`listen ${CHANNEL}`);
    } catch (err) {
      handlers.onError(err);
      reconnectLater(next);
      return;
    }
    if (closed) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    delayMs = 500;
    handlers.onConnected();
  };

  const reconnectLater = (failed: Client) => {
    failed.removeAllListeners('end');
    failed.end().catch(() => undefined);
    if (client === failed) client = undefined;
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, delayMs);
    retryTimer.unref();
    delayMs = Math.min(delayMs * 2, 30_000);
  };

  void connect();
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      current?.removeAllListeners('end');
      await current?.end().catch(() => undefined);
    },
  };
}
