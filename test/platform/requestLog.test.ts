import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { applyRetention } from '../../services/retention/retentionPass';

/**
 * The request log (GET /requests): a project's API requests, written in batches off the request
 * path (services/requestLog/requestLogWriter.ts), paged and filtered, removed by the retention
 * after REQUEST_LOG_RETENTION_DAYS.
 */
jest.setTimeout(60_000);

let stack: TestStack;
let account: TestAccount;
let project: TestProject;
let other: TestProject;

const requestIds: Record<string, string> = {};

beforeAll(async () => {
  stack = await startTestStack({ worker: false, env: { REQUEST_LOG_RETENTION_DAYS: '3' } });
  ({ account, project } = await accountWithProject(stack.http));
  ({ project: other } = await accountWithProject(stack.http));

  const key = { key: project.secretKey };
  const calls: Array<[string, () => Promise<{ status: number; headers: Headers }>, number]> = [
    ['list', () => stack.http.get('/contacts?limit=1', key), 200],
    ['missing', () => stack.http.get(`/contacts/${crypto.randomUUID()}`, key), 404],
    ['track', () => stack.http.post('/v1/track', { email: 'ada@example.com', event: 'signed-up' }, { key: project.publicKey }), 200],
    ['bad', () => stack.http.get('/emails?status=NOPE', key), 400],
    ['session', () => stack.http.get('/activity?limit=1', { cookie: account.cookie, headers: { 'X-Project-Id': project.id } }), 200],
  ];
  for (const [name, call, status] of calls) {
    const res = await call();
    expect(res.status).toBe(status);
    requestIds[name] = res.headers.get('x-request-id')!;
  }
  // Not the project's: another project's request, and requests made for no project.
  expect((await stack.http.get('/contacts?limit=1', { key: other.secretKey })).status).toBe(200);
  expect((await stack.http.get('/health')).status).toBe(200);
  expect((await stack.http.get('/config')).status).toBe(200);
  expect((await stack.http.get('/contacts?limit=1', { key: 'sk_unknown_key_of_nobody_at_all_000000' })).status).toBe(401);
});

afterAll(async () => {
  await stack?.stop();
});

const list = (query = '', key = project.secretKey) => stack.http.get(`/requests${query}`, { key });

describe('GET /requests', () => {
  it('lists the project’s requests within about a second, newest first, with status, duration, route and how they were authenticated', async () => {
    const page = await eventually(async () => {
      const res = await list();
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(5);
      return res.body;
    }, 5_000);
    expect(page.hasMore).toBe(false);
    expect(page.cursor).toBeNull();
    const byRequestId = new Map<string, any>(page.data.map((r: any) => [r.requestId, r]));
    expect(byRequestId.get(requestIds.missing)).toMatchObject({ method: 'GET', route: '/contacts/:id', status: 404, auth: 'secret' });
    expect(byRequestId.get(requestIds.missing).path).toMatch(/^\/contacts\/[0-9a-f-]{36}$/);
    expect(byRequestId.get(requestIds.list)).toMatchObject({ path: '/contacts', route: '/contacts', status: 200, auth: 'secret' });
    expect(byRequestId.get(requestIds.track)).toMatchObject({ method: 'POST', path: '/v1/track', status: 200, auth: 'public' });
    expect(byRequestId.get(requestIds.bad)).toMatchObject({ path: '/emails', status: 400 });
    expect(byRequestId.get(requestIds.session)).toMatchObject({ path: '/activity', status: 200, auth: 'session' });
    for (const row of page.data) {
      expect(row.durationMs).toBeGreaterThanOrEqual(0);
      expect(row.durationMs).toBeLessThan(10_000);
      expect(Date.parse(row.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    }
    const times = page.data.map((r: any) => Date.parse(r.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // Reading the log is not logged, and another project's requests are its own.
    const again = await list();
    expect(again.body.data.map((r: any) => r.path)).not.toContain('/requests');
    await eventually(async () => expect((await list('', other.secretKey)).body.data).toHaveLength(1), 5_000);
  });

  it('filters by status class, by route or path start, and by how the request was authenticated', async () => {
    const paths = async (query: string) => {
      const res = await list(query);
      expect(res.status).toBe(200);
      return res.body.data.map((r: any) => `${r.status} ${r.path}`).sort();
    };
    expect(await paths('?status=4xx')).toEqual([expect.stringMatching(/^404 \/contacts\//), '400 /emails'].sort());
    expect(await paths('?status=5xx')).toEqual([]);
    expect((await paths('?status=2xx')).length).toBe(3);
    expect(await paths('?path=/v1/')).toEqual(['200 /v1/track']);
    expect(await paths('?path=/contacts/:id')).toEqual([expect.stringMatching(/^404 \/contacts\//)]);
    expect(await paths('?path=/contacts')).toHaveLength(2);
    expect(await paths('?auth=public')).toEqual(['200 /v1/track']);
    expect(await paths('?auth=session')).toEqual(['200 /activity']);
    expect(await paths('?auth=secret,public&status=2xx')).toEqual(['200 /contacts', '200 /v1/track']);
  });

  it('pages with a cursor', async () => {
    const first = await list('?limit=2');
    expect(first.body.data).toHaveLength(2);
    expect(first.body.hasMore).toBe(true);
    const second = await list(`?limit=2&cursor=${first.body.cursor}`);
    const third = await list(`?limit=2&cursor=${second.body.cursor}`);
    expect(third.body.hasMore).toBe(false);
    const ids = [...first.body.data, ...second.body.data, ...third.body.data].map((r: any) => r.id);
    expect(new Set(ids).size).toBe(5);
  });

  it('answers 400 for a query it cannot use, and needs the secret key', async () => {
    for (const query of ['?status=6xx', '?status=404', '?auth=robot', '?path=contacts', '?limit=zero', '?cursor=not-a-cursor']) {
      const res = await list(query);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('BAD_REQUEST');
    }
    const publicKey = await list('', project.publicKey);
    expect(publicKey.status).toBe(401);
    expect(publicKey.body.error.code).toBe('INVALID_API_KEY');
  });
});

describe('retention', () => {
  it('removes requests older than REQUEST_LOG_RETENTION_DAYS and keeps the rest', async () => {
    const em = stack.orm.em.fork();
    await em.execute(
      `insert into api_requests (project_id, created_at, method, path, route, status, duration_ms, auth, request_id)
       select ?, now() - make_interval(days => d), 'GET', '/contacts', '/contacts', 200, 1.5, 'secret', 'old-' || d
       from unnest(array[2, 4, 10]) as d`,
      [project.id],
    );
    const before = (await list('?limit=100')).body.data.length;
    const logger = { info: () => undefined, warn: () => undefined };
    const result = await applyRetention({ orm: stack.orm, settings: stack.config.retention, logger }, 'requestLog');
    expect(result).toEqual({ kind: 'requestLog', removed: 2, finished: true });
    const after = (await list('?limit=100')).body.data.map((r: any) => r.requestId);
    expect(after).toHaveLength(before - 2);
    expect(after).toContain('old-2');
    expect(after).not.toContain('old-4');
    expect(after).not.toContain('old-10');
  });
});
