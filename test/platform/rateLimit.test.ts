import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi, type ChildService } from '../support/processes';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { createOrm, type Orm } from '../../db/orm';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';
import { createCleanupActivities } from '../../activities/cleanupActivities';
import type { ActivityDeps } from '../../activities/deps';
import { maxInAnyWindow } from '../support/windows';

describe('rate limit across two API processes sharing one database', () => {
  let databaseUrl: string;
  const apis: Array<ChildService & { url: string }> = [];
  /** The database as the API processes use it, for the tests that choose the clock. */
  let orm: Orm;
  let otherOrm: Orm;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { ...testEnv({ RATE_LIMIT_PER_MINUTE: '10', SESSION_RATE_LIMIT_PER_MINUTE: '20' }), DATABASE_URL: databaseUrl };
    apis.push(...(await Promise.all([spawnApi(env), spawnApi(env)])));
    [orm, otherOrm] = await Promise.all([createOrm(databaseUrl), createOrm(databaseUrl)]);
  }, 180_000); // two API starts at once on a loaded machine, each allowed spawnApi's 120 s

  afterAll(async () => {
    for (const api of apis) {
      api.kill();
      await api.exited;
    }
    await Promise.all([orm?.close(), otherOrm?.close()]);
    await dropTestDatabase(databaseUrl);
  });

  const newProject = async () => (await accountWithProject(new HttpClient(apis[0].url))).project;

  /**
   * The least Retry-After a refusal answered now can say when the budget's first request was sent
   * after `windowStartedAt`, however long the requests took: counted by whole seconds, that request
   * leaves the rolling minute 61 s after the second it was counted in, and at most
   * Math.ceil(elapsed) of those seconds have begun since. One second below that is slack for what
   * separates the test's clock from the database's.
   */
  const leastRetryAfter = (windowStartedAt: number) => 60 - Math.ceil((Date.now() - windowStartedAt) / 1000);

  it('enforces one budget per project over both processes, with the RateLimit headers and Retry-After', async () => {
    const [a, b] = apis.map((api) => new HttpClient(api.url));
    const { account, project } = await accountWithProject(a);
    const other = await accountWithProject(a);

    const statuses: number[] = [];
    // Before the budget's first request: however slowly the ten go, Retry-After is counted from it.
    const windowStartedAt = Date.now();
    for (let i = 0; i < 10; i++) {
      const res = await (i % 2 ? b : a).get('/outbox', { key: project.secretKey });
      statuses.push(res.status);
      expect(res.headers.get('ratelimit-limit')).toBe('10');
      expect(Number(res.headers.get('ratelimit-remaining'))).toBe(9 - i);
      // Counted in the current second, which leaves the rolling minute within 61 s.
      expect(res.headers.get('ratelimit-reset')).toBe('61');
    }
    expect(statuses).toEqual(Array(10).fill(200));

    const limited = await b.get('/outbox', { key: project.secretKey });
    const atLeast = leastRetryAfter(windowStartedAt);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    // The oldest accepted request leaves the window within a minute (and a second) of being counted.
    expect(limited.body.error.details.retryAfter).toBeGreaterThanOrEqual(atLeast);
    expect(limited.body.error.details.retryAfter).toBeLessThanOrEqual(61);
    expect(Number(limited.headers.get('retry-after'))).toBe(limited.body.error.details.retryAfter);
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect((await a.get('/outbox', { key: project.secretKey })).status).toBe(429);
    // A dashboard session on the project has its user's own budget (contract 4), not the project's.
    const bySession = await a.get('/outbox', { cookie: account.cookie, headers: { 'X-Project-Id': project.id } });
    expect(bySession.status).toBe(200);
    expect(bySession.headers.get('ratelimit-limit')).toBe('20');

    // Refused requests are not counted: the security overview shows the 10 accepted ones.
    const security = await a.get(`/users/@me/projects/${project.id}/security`, { cookie: account.cookie });
    expect(security.body.rateLimit).toEqual({ perMinute: 10, usedThisMinute: 10 });

    // Another project has its own budget; unauthenticated endpoints are not limited.
    expect((await b.get('/outbox', { key: other.project.secretKey })).status).toBe(200);
    expect((await a.get('/health')).status).not.toBe(429);
  });

  it('counts a dashboard session against its user’s budget over both processes, leaving the project’s whole', async () => {
    const [a, b] = apis.map((api) => new HttpClient(api.url));
    const { account, project } = await accountWithProject(a);
    const asSession = { cookie: account.cookie, headers: { 'X-Project-Id': project.id } };
    const windowStartedAt = Date.now();
    for (let i = 0; i < 20; i++) {
      const res = await (i % 2 ? b : a).get('/contacts?limit=1', asSession);
      expect(res.status).toBe(200);
      expect(Number(res.headers.get('ratelimit-remaining'))).toBe(19 - i);
    }
    const limited = await b.get('/contacts?limit=1', asSession);
    const atLeast = leastRetryAfter(windowStartedAt);
    expect(limited.status).toBe(429);
    expect(limited.body.error.message).toBe('Rate limit of 20 requests per minute for your dashboard sessions exceeded');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(atLeast);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(61);
    // The project's budget is whole: its first request with the key sees all 10 but itself left.
    const byKey = await a.get('/contacts?limit=1', { key: project.secretKey });
    expect(byKey.status).toBe(200);
    expect(byKey.headers.get('ratelimit-remaining')).toBe('9');
    // Another user's session has a budget of its own.
    const other = await accountWithProject(a);
    expect((await b.get('/contacts?limit=1', { cookie: other.account.cookie, headers: { 'X-Project-Id': other.project.id } })).status).toBe(200);
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

  it('counts exactly under concurrency from many connections of two processes', async () => {
    const project = await newProject();
    // 300 statements at once from two connection pools, at the database clock.
    const hits = await Promise.all(
      Array.from({ length: 300 }, (_, i) => rateLimitRepository.hit((i % 2 ? orm : otherOrm).em.fork(), project.id, { limit: 100 })),
    );
    expect(hits.flat().filter((h) => h.accepted)).toHaveLength(100);
  });

  describe('at a clock the test chooses', () => {
    const limit = 1000;
    const minute = Date.UTC(2030, 0, 1, 12, 0, 0);

    /** Sends one request at each time (one statement each), returning the times accepted. */
    async function send(projectId: string, times: number[]): Promise<number[]> {
      const accepted: number[] = [];
      for (const at of times) {
        const [hit] = await rateLimitRepository.hit(orm.em.fork(), projectId, { limit, at: new Date(at) });
        if (hit.accepted) accepted.push(at);
      }
      return accepted;
    }
    /** `count` requests spread evenly over `seconds` from `start`. */
    const evenly = (start: number, seconds: number, count: number) => Array.from({ length: count }, (_, i) => start + Math.floor((i * seconds * 1000) / count));

    it('lets no more than the limit through in any 60 s when bursts straddle a clock minute', async () => {
      const project = await newProject();
      // 1,000 in the last 10 s of a clock minute, 1,000 more 30 s later (a per-minute estimate let
      // 1,348 through within 60 s), then 1,000 more once the first burst is a minute old.
      const first = await send(project.id, evenly(minute + 50_000, 10, 1000));
      const second = await send(project.id, evenly(minute + 90_000, 10, 1000));
      const third = await send(project.id, evenly(minute + 111_000, 10, 1000));

      expect(first).toHaveLength(1000);
      expect(second).toHaveLength(0);
      // The budget comes back as the first burst's seconds leave the rolling minute.
      expect(third.length).toBeGreaterThanOrEqual(900);
      expect(maxInAnyWindow([...first, ...second, ...third], 60_000)).toBeLessThanOrEqual(limit);
    });

    it('requests spread evenly over 70 s above the limit: at most the limit in any 60 s, yet never starved', async () => {
      const project = await newProject();
      // 1,200 a minute, for 70 s.
      const accepted = await send(project.id, evenly(minute, 70, 1400));
      expect(maxInAnyWindow(accepted, 60_000)).toBeLessThanOrEqual(limit);
      // The first 1,000 in the first 50 s; from the 61st second on, what leaves the window is let in again.
      expect(accepted.filter((t) => t < minute + 60_000)).toHaveLength(1000);
      expect(accepted.filter((t) => t >= minute + 61_000).length).toBeGreaterThanOrEqual(150);
    });

    it('Retry-After says when the oldest accepted second leaves the rolling minute', async () => {
      const project = await newProject();
      const at = (ms: number) => ({ limit: 10, at: new Date(minute + ms) });
      const accepted = await rateLimitRepository.hit(orm.em.fork(), project.id, { ...at(200), requests: 10 });
      expect(accepted.map((h) => h.accepted)).toEqual(Array(10).fill(true));
      expect(accepted[9]).toMatchObject({ used: 10, resetSeconds: 61 });

      const [refused] = await rateLimitRepository.hit(orm.em.fork(), project.id, at(30_500));
      expect(refused).toMatchObject({ accepted: false, used: 10, retryAfterSeconds: 31, resetSeconds: 31 });
      // A second before that, still refused; at it, accepted.
      expect((await rateLimitRepository.hit(orm.em.fork(), project.id, at(60_500)))[0].accepted).toBe(false);
      expect((await rateLimitRepository.hit(orm.em.fork(), project.id, at(61_500)))[0]).toMatchObject({ accepted: true, used: 1 });
    });

    it('requests counted together each get their own verdict, in order', async () => {
      const project = await newProject();
      const options = { limit: 10, at: new Date(minute) };
      const four = await rateLimitRepository.hit(orm.em.fork(), project.id, { ...options, requests: 4 });
      expect(four.map((h) => [h.accepted, h.used])).toEqual([
        [true, 1],
        [true, 2],
        [true, 3],
        [true, 4],
      ]);
      const ten = await rateLimitRepository.hit(orm.em.fork(), project.id, { ...options, requests: 10 });
      expect(ten.map((h) => h.accepted)).toEqual([...Array(6).fill(true), ...Array(4).fill(false)]);
      expect(ten.map((h) => h.used)).toEqual([5, 6, 7, 8, 9, 10, 10, 10, 10, 10]);
      expect(ten[9].retryAfterSeconds).toBe(61);
    });

    it('the hourly cleanup removes the counts of projects idle for two minutes, and they start afresh', async () => {
      const [idle, active] = [await newProject(), await newProject()];
      await rateLimitRepository.hit(orm.em.fork(), idle.id, { limit: 10, requests: 10, at: new Date(Date.now() - 5 * 60_000) });
      await rateLimitRepository.hit(orm.em.fork(), active.id, { limit: 10, requests: 3 });
      const rows = async () =>
        (await orm.em.fork().execute(`select project_id from rate_limit_seconds where project_id in (?, ?)`, [idle.id, active.id])).map((r) => r.project_id);

      // The rate-limit cleanup needs only the database (the retention rules read their settings from config).
      const deleted = await createCleanupActivities({ orm, config: { retention: {} } } as unknown as ActivityDeps).deleteStaleRateLimitWindows();
      expect(deleted).toBeGreaterThanOrEqual(1);
      expect(await rows()).toEqual([active.id]);
      expect((await rateLimitRepository.hit(orm.em.fork(), idle.id, { limit: 10 }))[0]).toMatchObject({ accepted: true, used: 1 });
      expect((await rateLimitRepository.hit(orm.em.fork(), active.id, { limit: 10 }))[0]).toMatchObject({ accepted: true, used: 4 });
    });
  });
});
