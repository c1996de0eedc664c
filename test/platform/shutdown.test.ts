import http from 'node:http';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi } from '../support/processes';
import { eventually } from '../support/eventually';

describe('graceful shutdown of the API', () => {
  it('finishes an in-flight request after SIGTERM, refuses new connections, then exits 0', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await spawnApi({ ...testEnv(), DATABASE_URL: databaseUrl });
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
      // probes are further apart): new connections are refused, the request above still in flight.
      await eventually(
        async () => {
          await expect(fetch(`${api.url}/health`)).rejects.toThrow();
        },
        10_000,
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
  });
});
