import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi, type ChildService } from '../support/processes';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';

describe('rate limit across two API processes sharing one database', () => {
  let databaseUrl: string;
  const apis: Array<ChildService & { url: string }> = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { ...testEnv({ RATE_LIMIT_PER_MINUTE: '10' }), DATABASE_URL: databaseUrl };
    apis.push(...(await Promise.all([spawnApi(env), spawnApi(env)])));
  }, 60_000);

  afterAll(async () => {
    for (const api of apis) {
      api.kill();
      await api.exited;
    }
    await dropTestDatabase(databaseUrl);
  });

  it('enforces one budget per project over both processes, with the RateLimit headers and Retry-After', async () => {
    const [a, b] = apis.map((api) => new HttpClient(api.url));
    const { project } = await accountWithProject(a);
    const other = await accountWithProject(a);

    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await (i % 2 ? b : a).get('/outbox', { key: project.secretKey });
      statuses.push(res.status);
      expect(res.headers.get('ratelimit-limit')).toBe('10');
      expect(Number(res.headers.get('ratelimit-remaining'))).toBe(9 - i);
    }
    expect(statuses).toEqual(Array(10).fill(200));

    const limited = await b.get('/outbox', { key: project.secretKey });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(limited.body.error.details.retryAfter).toBeGreaterThan(0);
    expect(Number(limited.headers.get('retry-after'))).toBe(limited.body.error.details.retryAfter);
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect((await a.get('/outbox', { key: project.secretKey })).status).toBe(429);

    // Another project has its own budget; unauthenticated endpoints are not limited.
    expect((await b.get('/outbox', { key: other.project.secretKey })).status).toBe(200);
    expect((await a.get('/health')).status).not.toBe(429);
  });

  it('lets exactly the budget through when requests arrive all at once on both processes', async () => {
    const [a, b] = apis.map((api) => new HttpClient(api.url));
    const { project } = await accountWithProject(a);
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => (i % 2 ? b : a).get('/outbox', { key: project.secretKey })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    const remaining = results.filter((r) => r.status === 200).map((r) => Number(r.headers.get('ratelimit-remaining')));
    expect(remaining.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

