import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi, type ChildService } from '../support/processes';
import { HttpClient, type HttpResponse } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { maxInAnyWindow } from '../support/windows';

/**
 * The one test that takes real time (70 s): the rolling minute at the database's own clock,
 * through two API processes sharing one budget, as a client sending steadily over the limit
 * sees it. The same patterns at a chosen clock, in seconds, are in rateLimit.test.ts.
 */
describe('rate limit over 70 real seconds, two API processes', () => {
  let databaseUrl: string;
  const apis: Array<ChildService & { url: string }> = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { ...testEnv({ RATE_LIMIT_PER_MINUTE: '1000' }), DATABASE_URL: databaseUrl };
    apis.push(...(await Promise.all([spawnApi(env), spawnApi(env)])));
  }, 60_000);

  afterAll(async () => {
    for (const api of apis) {
      api.kill();
      await api.exited;
    }
    await dropTestDatabase(databaseUrl);
  });

  it('1,400 requests spread evenly over 70 s: at most 1,020 succeed in any 60 s, and the budget comes back after a minute', async () => {
    const clients = apis.map((api) => new HttpClient(api.url));
    const { project } = await accountWithProject(clients[0]);
    const warmUp = await accountWithProject(clients[1]);
    await Promise.all(clients.map((c) => c.get('/outbox', { key: warmUp.project.secretKey })));

    // 20 a second (1,200 a minute), alternating between the processes, each sent on schedule
    // whether or not the ones before it have been answered.
    const start = Date.now() + 100;
    const sent = await Promise.all(
      Array.from(
        { length: 1400 },
        (_, i) =>
          new Promise<{ at: number; res: HttpResponse }>((resolve, reject) =>
            setTimeout(() => {
              const at = Date.now();
              clients[i % 2].get('/outbox', { key: project.secretKey }).then((res) => resolve({ at, res }), reject);
            }, start + i * 50 - Date.now()),
          ),
      ),
    );

    const accepted = sent.filter((s) => s.res.status === 200).map((s) => s.at);
    const refused = sent.filter((s) => s.res.status === 429);
    expect(accepted.length + refused.length).toBe(1400);
    // The bound (2% over the limit) absorbs the client's view of time: the server counts
    // a request a few milliseconds after the client sent it.
    expect(maxInAnyWindow(accepted, 60_000)).toBeLessThanOrEqual(1020);
    // Not starved: the first 1,000 pass within the first minute, and from about 61 s on, what
    // leaves the rolling minute is let in again (20 a second for the last ~9 s).
    expect(accepted.filter((t) => t < start + 60_000).length).toBeGreaterThanOrEqual(980);
    expect(accepted.filter((t) => t >= start + 62_000).length).toBeGreaterThanOrEqual(100);
    for (const { res } of refused) {
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(61);
      expect(res.headers.get('ratelimit-remaining')).toBe('0');
    }
  }, 120_000);
});
