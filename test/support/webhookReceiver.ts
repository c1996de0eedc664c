import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP(S) server standing in for a user's webhook endpoint. It records every request
 * (method, path, headers, raw body) and answers 200 `{"ok":true}` unless the test sets a handler,
 * for a path or for all paths.
 */
export interface ReceivedRequest {
  method: string;
  /** Path and query, as sent. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body as received (what a signature is checked against). */
  body: string;
  /** The local address the request arrived on. */
  localAddress: string;
  /** The sender's port: requests with the same one came over the same connection. */
  remotePort: number;
  receivedAt: Date;
}

export type ReceiverHandler = (req: ReceivedRequest, res: http.ServerResponse) => void;

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` (or the host given), without a trailing slash. */
  url: string;
  host: string;
  port: number;
  requests: ReceivedRequest[];
  /** Answers requests to `path` (exact path without query, or '*' for every path) with `handler`. */
  on(path: string, handler: ReceiverHandler): void;
  /** Connections open now (kept alive or busy). */
  openConnections(): number;
  /** Closes the connections that wait for a next request (a receiver's keep-alive timeout). */
  closeIdleConnections(): void;
  /** Forgets recorded requests and handlers. */
  reset(): void;
  close(): Promise<void>;
}

export interface WebhookReceiverOptions {
  /** Address to listen on; default 127.0.0.1 (any 127.x address works on Linux). */
  host?: string;
  /** Port to listen on; default a free one. */
  port?: number;
  /** PEM key and certificate: serve HTTPS. */
  tls?: { key: string | Buffer; cert: string | Buffer };
}

export async function startWebhookReceiver(options: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
  const host = options.host ?? '127.0.0.1';
  const requests: ReceivedRequest[] = [];
  const handlers = new Map<string, ReceiverHandler>();
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        localAddress: req.socket.localAddress ?? '',
        remotePort: req.socket.remotePort ?? 0,
        receivedAt: new Date(),
      };
      requests.push(received);
      const handler = handlers.get(received.path.split('?')[0]) ?? handlers.get('*');
      if (handler) return handler(received, res);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  };
  const server = options.tls ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, listener) : http.createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let open = 0;
  server.on('connection', (socket) => {
    open++;
    socket.once('close', () => open--);
  });
  return {
    url: `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    host,
    port,
    requests,
    on(path, handler) {
      handlers.set(path, handler);
    },
    openConnections: () => open,
    closeIdleConnections: () => server.closeIdleConnections(),
    reset() {
      requests.length = 0;
      handlers.clear();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
