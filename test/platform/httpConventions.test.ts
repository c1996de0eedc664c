import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
});
afterAll(() => stack.stop());

describe('request ids', () => {
  it('answers every response with a generated X-Request-ID that the error envelope repeats', async () => {
    const res = await stack.http.get('/no/such/route');
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.error.requestId).toBe(id);
  });

  it("keeps the caller's own request id when it is printable ASCII of 1-200 characters", async () => {
    const res = await stack.http.get('/health', { headers: { 'X-Request-ID': 'trace-abc-123' } });
    expect(res.headers.get('x-request-id')).toBe('trace-abc-123');
  });

  it('replaces an unacceptable request id with a new one', async () => {
    const res = await stack.http.get('/health', { headers: { 'X-Request-ID': 'x'.repeat(201) } });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('error envelope', () => {
  it('answers unknown routes 404 RESOURCE_NOT_FOUND in the envelope', async () => {
    const res = await stack.http.get('/definitely-not-here');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      success: false,
      error: { code: 'RESOURCE_NOT_FOUND', statusCode: 404, message: expect.any(String) },
      timestamp: expect.any(String),
    });
  });

  it('answers malformed JSON 400 INVALID_REQUEST_BODY', async () => {
    const res = await stack.http.request('POST', '/auth/login', { rawBody: '{"email": "a@b.c",', headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_REQUEST_BODY', message: 'Invalid JSON in request body' });
  });

  it('answers a JSON scalar body (not an object) with a 4xx, never a 500', async () => {
    const res = await stack.http.request('POST', '/auth/login', { rawBody: '"just a string"', headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  it('answers bodies over the limit 413', async () => {
    const huge = JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(2 * 1024 * 1024) });
    const res = await stack.http.request('POST', '/auth/login', { rawBody: huge, headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(res.body.error.statusCode).toBe(413);
  });

  it('maps zod errors to VALIDATION_ERROR items with dot paths and zod codes', async () => {
    const res = await stack.http.post('/auth/signup', { email: 'not-an-email', password: 5 });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toBe('Request validation failed');
    expect(res.body.error.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'email', code: 'invalid_string' }),
        expect.objectContaining({ field: 'password', code: 'invalid_type', received: 'number' }),
      ]),
    );
  });

  it('ignores unknown body fields', async () => {
    const res = await stack.http.post('/auth/signup', { email: 'extra-fields@example.com', password: 'long enough password', favouriteColour: 'blue' });
    expect(res.status).toBe(201);
  });

  it('answers a wrong method on a known route 405', async () => {
    const res = await stack.http.request('DELETE', '/health');
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('survives hostile input on every account field without a 500', async () => {
    const { account } = await accountWithProject(stack.http);
    const nasty = ['', ' ', '\r\nBcc: x@y.z', '💌'.repeat(5000), null, 12, [], {}, true, 'a'.repeat(100_000)];
    for (const value of nasty) {
      for (const [path, body] of [
        ['/auth/signup', { email: value, password: value }],
        ['/auth/login', { email: value, password: value }],
        ['/auth/verify-email', { token: value }],
        ['/auth/reset-password', { token: value, password: value }],
        ['/auth/request-password-reset', { email: value }],
        ['/users/@me/projects', { name: value }],
      ] as const) {
        const res = await stack.http.post(path, body, { cookie: account.cookie });
        if (res.status < 400 || res.status >= 500) throw new Error(`${path} ${JSON.stringify(body).slice(0, 80)} answered ${res.status}`);
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
      }
    }
  });
});

describe('hostile URLs and cursors', () => {
  it('refuses NUL characters anywhere in the URL with 400', async () => {
    const { project } = await accountWithProject(stack.http);
    for (const path of ['/contacts?search=a%00b', '/events?name=%00', '/events/x%00y', '/contacts/fields/data.a%00/values']) {
      const method = path.startsWith('/events/x') ? 'DELETE' : 'GET';
      const res = await stack.http.request(method, path, { key: project.secretKey });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/NUL/);
    }
  });

  it('refuses forged, foreign or garbled cursors with 400 on every cursor list', async () => {
    const { project } = await accountWithProject(stack.http);
    const forged = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const cursors = [
      'garbage!!',
      forged({ s: 'email', d: 'asc', v: 'a\u0000', id: '00000000-0000-4000-8000-000000000000' }),
      forged({ s: 'createdAt', d: 'desc', v: 'not a date', id: '00000000-0000-4000-8000-000000000000' }),
      forged({ t: 'yesterday', id: 'nope' }),
      forged([1, 2, 3]),
    ];
    for (const cursor of cursors) {
      for (const list of ['/contacts', '/contacts?sort=email&dir=asc', '/events', '/outbox']) {
        const res = await stack.http.get(`${list}${list.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`, { key: project.secretKey });
        expect([list, res.status]).toEqual([list, 400]);
      }
    }
  });
});

describe('request logs', () => {
  it('writes one JSON line per request with method, path, status, duration, requestId and projectId', async () => {
    const { project } = await accountWithProject(stack.http);
    const res = await stack.http.get('/outbox', { key: project.secretKey, headers: { 'X-Request-ID': 'log-line-check' } });
    expect(res.status).toBe(200);
    const lines = stack.logs.filter((l) => l.requestId === 'log-line-check');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ method: 'GET', path: '/outbox', status: 200, projectId: project.id, durationMs: expect.any(Number) });
  });
});
