import http from 'node:http';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi } from '../support/processes';
import { eventually } from '../support/eventually';

describe('graceful shutdown of the API', () => {
  it('finishes an in-flight request after SIGTERM, refuses new connections, then exits 0', async () => {
    const databaseUrl = await createTestDatabase();
    // No notice period (test/platform/apiDrain.test.ts covers it): the listener closes as soon as
    // no connection is queued. A grace no loaded machine runs out of: the request below must still
    // be answered after the probes, with a password check.
    const api = await spawnApi({ ...testEnv({ API_SHUTDOWN_NOTICE_MS: '0', API_SHUTDOWN_GRACE_MS: '60000' }), DATABASE_URL: databaseUrl });
    try {
      const port = Number(new URL(api.url).port);
      const body = JSON.stringify({ email: 'slow@example.com', password: 'a slow password' });
      // A request whose body arrives slowly is in flight when the signal comes: the server has read
      // its head and handed it on (Node answers 100 Continue then), and has part of the body.
      let finishBody!: () => void;
      let inFlight!: () => void;
      const requestInFlight = new Promise<void>((resolve) => (inFlight = resolve));
      const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/auth/login',
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Expect: '100-continue' },
          },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        );
        req.on('error', reject);
        req.on('continue', () => {
          req.write(body.slice(0, 10));
          finishBody = () => req.end(body.slice(10));
          inFlight();
        });
      });
      await requestInFlight;
      api.kill('SIGTERM');
      await api.waitForLine((l) => l.msg === 'api shutting down: draining in-flight requests');
      // While draining, the listener closes (once no connection has arrived for 100 ms, so the
      // probes are further apart; at the latest after half the grace): new connections are
      // refused, the request above still in flight.
      await eventually(
        async () => {
          await expect(fetch(`${api.url}/health`)).rejects.toThrow();
        },
        60_000,
        250,
      );
      finishBody();
      const res = await response;
      expect(res.status).toBe(401); // a complete, real answer (no such user), not a dropped connection
      expect(JSON.parse(res.text).error.code).toBe('INVALID_CREDENTIALS');
      expect(await api.exited).toBe(0);
      expect(api.lines.some((l) => l.msg === 'api stopped')).toBe(true);
    } finally {
      api.kill('SIGKILL');
      await dropTestDatabase(databaseUrl);
    }
  }, 240_000); // the API's start (up to 120 s) and its drain (up to the 60 s grace) on a loaded machine
});
