import { startTestStack, type TestStack } from '../support/testStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import type { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { eventually } from '../support/eventually';

/**
 * The API's connections to PostgreSQL go through a proxy the test cuts: a database that is
 * unreachable (stopped, failing over) or that drops every connection (a restart) is answered
 * 503 with Retry-After, in the envelope and within seconds, never 500 and never a hang; service
 * comes back by itself.
 */
describe('the database away', () => {
  let proxy: TcpProxy;
  let stack: TestStack;
  let http: HttpClient;
  let key: string;
  let publicKey: string;

  beforeAll(async () => {
    const server = new URL(process.env.MAILROOM_TEST_PG_SERVER_URL!);
    proxy = await startTcpProxy(`${server.hostname}:${server.port || 5432}`);
    stack = await startTestStack({
      worker: false,
      apiDatabaseUrl: (url) => {
        const through = new URL(url);
        through.host = proxy.address;
        return through.toString();
      },
    });
    http = stack.http;
    ({ secretKey: key, publicKey } = (await accountWithProject(http)).project);
  });
  afterAll(async () => {
    proxy.setMode('pass');
    await stack.stop();
    await proxy.close();
  });

  it('answers reads and writes 503 with Retry-After while PostgreSQL is unreachable, and serves again once it is back', async () => {
    expect((await http.get('/contacts', { key })).status).toBe(200);
    proxy.setMode('refuse');
    for (const request of [
      () => http.get('/contacts', { key }),
      () => http.post('/contacts', { email: 'away@example.com' }, { key }),
      () => http.post('/v1/track', { email: 'away@example.com', event: 'signed-up' }, { key: publicKey }),
      () => http.post('/v1/send', { to: 'away@example.com', subject: 'Hello', body: '<p>Hi</p>' }, { key }),
    ]) {
      const startedAt = Date.now();
      const res = await request();
      expect({ status: res.status, code: res.body?.error?.code, retryAfter: res.headers.get('retry-after') }).toEqual({
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
        retryAfter: '5',
      });
      expect(res.body.error.message).toMatch(/database is unavailable/);
      expect(Date.now() - startedAt).toBeLessThan(15_000);
    }
    proxy.setMode('pass');
    await eventually(async () => expect((await http.get('/contacts', { key })).status).toBe(200));
    // The write answered 503 changed nothing.
    const contacts = await http.get('/contacts?search=away%40example.com', { key });
    expect(contacts.body.data).toEqual([]);
  });

  it('answers 200 or 503, never 500, when every connection is dropped under load, and recovers', async () => {
    const before = await Promise.all(Array.from({ length: 20 }, () => http.get('/contacts', { key })));
    expect(before.every((r) => r.status === 200)).toBe(true);
    // Changing the mode cuts every open connection: the pool's idle ones are dead now.
    proxy.setMode('refuse');
    proxy.setMode('pass');
    const during = await Promise.all(Array.from({ length: 20 }, () => http.get('/contacts', { key })));
    expect(during.filter((r) => r.status !== 200 && r.status !== 503).map((r) => `${r.status} ${r.text}`)).toEqual([]);
    await eventually(async () => expect((await http.get('/contacts', { key })).status).toBe(200));
  });
});
