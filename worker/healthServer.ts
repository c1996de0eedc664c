/**
 * The worker's own GET /health (WORKER_HEALTH_PORT), for systemd watchdogs, Kubernetes probes or
 * a load balancer: 200 while the worker polls and Temporal answers, 503 otherwise (still
 * connecting, shutting down, or Temporal unreachable). The worker serves no other HTTP.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { CachedHealthCheck } from '../temporal/healthCheck';

export interface WorkerHealthServer {
  port: number;
  /** Called once the worker exists; until then /health answers 503 "starting". */
  attach(worker: Worker, connection: NativeConnection): void;
  close(): Promise<void>;
}

export async function startWorkerHealthServer(port: number, host = '0.0.0.0'): Promise<WorkerHealthServer> {
  let worker: Worker | undefined;
  let temporal: CachedHealthCheck | undefined;

  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/health') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Not found' }));
      return;
    }
    void (async () => {
      const state = worker?.getState() ?? 'STARTING';
      const temporalUp = temporal ? await temporal.isHealthy() : false;
      const ok = state === 'RUNNING' && temporalUp;
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify({ status: ok ? 'ok' : 'degraded', worker: state, temporal: temporalUp ? 'ok' : 'down' }));
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });

  return {
    port: (server.address() as AddressInfo).port,
    attach(w, connection) {
      worker = w;
      temporal = new CachedHealthCheck(() => connection.withDeadline(Date.now() + 900, () => connection.workflowService.getSystemInfo({})));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
