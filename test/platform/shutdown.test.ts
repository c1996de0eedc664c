import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi } from '../support/processes';

describe('graceful shutdown of the API', () => {
  it('finishes an in-flight request after SIGTERM, refuses new connections, then exits 0', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await spawnApi({ ...testEnv(), DATABASE_URL: databaseUrl });
    try {
      const port = Number(new URL(api.url).port);
      const body = JSON.stringify({ email: 'slow@example.com', password: 'a slow password' });
      // A request whose body arrives slowly is in flight when the signal comes.
      let req!: http.ClientRequest;
      const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
        req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: '/auth/login', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, 10));
      });
      const draining = (async () => {
        await sleep(300);
        api.kill('SIGTERM');
        await sleep(500);
        // While draining, the listener is closed: new connections are refused.
        const refused = await fetch(`${api.url}/health`).then(
          () => false,
          () => true,
        );
        req.end(body.slice(10));
        return refused;
      })();
      const [res, refusedWhileDraining] = await Promise.all([response, draining]);
      expect(refusedWhileDraining).toBe(true);
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
