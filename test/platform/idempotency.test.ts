import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { HttpClient, type HttpResponse } from '../support/http';
import { requestId } from '../../api/middleware/requestId';
import { errorHandler } from '../../api/middleware/errorHandler';
import { requireKey } from '../../api/auth/apiKey';
import { idempotency } from '../../api/middleware/idempotency';
import { jsonBody } from '../../api/middleware/jsonBody';
import { badRequest } from '../../lib/errors';
import type { AppState } from '../../api/state';
import { hourlyCleanupScheduleId } from '../../worker/schedules';
import { eventually } from '../support/eventually';

/**
 * The middleware is mounted here on a route whose handler counts how often it really ran, with
 * the API's own auth and error handling and the real database: the counts are the point.
 */
let stack: TestStack;
let server: http.Server;
let client: HttpClient;
const performed: string[] = [];

/**
 * Requests sent with `hold: true` wait in the handler (in flight: the key claimed, no outcome yet)
 * until the test releases them; `entered` counts those that got that far.
 */
let held = { entered: 0, onEnter: () => {}, released: Promise.resolve() };

/** From now on, held requests wait until `release()`; `secondEntered` resolves if two get in. */
function holdRequests() {
  let release!: () => void;
  let secondEntered!: () => void;
  const second = new Promise<void>((resolve) => (secondEntered = resolve));
  held = {
    entered: 0,
    onEnter: () => {
      if (++held.entered === 2) secondEntered();
    },
    released: new Promise<void>((resolve) => (release = resolve)),
  };
  return { release, secondEntered: second };
}

beforeAll(async () => {
  stack = await startTestStack();
  const app = new Koa<AppState>();
  const router = new Router<AppState>();
  router.post('/perform', requireKey('secret', { config: stack.config }), idempotency(stack.config.idempotencyKeyTtlHours), async (ctx) => {
    const body = ctx.request.body as { label: string; fail?: boolean; hold?: boolean };
    if (body.fail) throw badRequest('told to fail');
    if (body.hold) {
      held.onEnter();
      await held.released;
    }
    performed.push(body.label);
    ctx.body = { ok: true };
  });
  app
    .use(requestId())
    .use(errorHandler(stack.logger))
    .use(jsonBody())
    .use(async (ctx, next) => {
      ctx.state.em = stack.orm.em.fork();
      await next();
    });
  app.use(router.routes());
  const handleRequest = app.callback();
  // Koa settles every request itself; the promise it returns never rejects.
  server = http.createServer((req, res) => void handleRequest(req, res)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  client = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
afterAll(async () => {
  server.close();
  await stack.stop();
});

it('performs two concurrent requests with one key exactly once; the other gets 409 with the original in flight', async () => {
  const { project } = await accountWithProject(stack.http);
  const send = (hold = false) => client.post('/perform', { label: 'concurrent', hold }, { key: project.secretKey, headers: { 'Idempotency-Key': 'same-key' } });
  // The request let through stays in its handler until the other two are answered (or, were the
  // key not honoured, until a second one gets there too): they are refused while it is in flight.
  const gate = holdRequests();
  const sent = [send(true), send(true), send(true)];
  const answeredWhileHeld: HttpResponse[] = [];
  const twoAnswered = new Promise<void>((resolve, reject) => {
    for (const response of sent) {
      void response.then((r) => {
        if (answeredWhileHeld.push(r) === 2) resolve();
      }, reject);
    }
  });
  try {
    await Promise.race([twoAnswered, gate.secondEntered]);
    expect(answeredWhileHeld.map((r) => r.status)).toEqual([409, 409]);
  } finally {
    gate.release();
  }
  const results = await Promise.all(sent);
  expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
  expect(performed.filter((l) => l === 'concurrent')).toHaveLength(1);
  const conflict = results.find((r) => r.status === 409)!;
  expect(conflict.body.error).toMatchObject({
    code: 'IDEMPOTENCY_KEY_REUSED',
    details: { key: 'same-key', originalRequest: 'POST /perform', originalStatusCode: null, originalRequestAt: expect.any(String) },
  });

  const later = await send();
  expect(later.status).toBe(409);
  expect(later.body.error.details.originalStatusCode).toBe(200);
  expect(performed.filter((l) => l === 'concurrent')).toHaveLength(1);
});

it('scopes keys per project', async () => {
  const a = await accountWithProject(stack.http);
  const b = await accountWithProject(stack.http);
  for (const { project } of [a, b]) {
    const res = await client.post('/perform', { label: 'scoped' }, { key: project.secretKey, headers: { 'Idempotency-Key': 'shared-name' } });
    expect(res.status).toBe(200);
  }
  expect(performed.filter((l) => l === 'scoped')).toHaveLength(2);
});

it('releases the key when the first request ends 4xx', async () => {
  const { project } = await accountWithProject(stack.http);
  const headers = { 'Idempotency-Key': 'retry-after-fix' };
  expect((await client.post('/perform', { label: 'fixed', fail: true }, { key: project.secretKey, headers })).status).toBe(400);
  expect((await client.post('/perform', { label: 'fixed' }, { key: project.secretKey, headers })).status).toBe(200);
  expect(performed.filter((l) => l === 'fixed')).toHaveLength(1);
});

it('refuses keys that are empty, too long or not printable ASCII with 400', async () => {
  const { project } = await accountWithProject(stack.http);
  for (const key of ['x'.repeat(256), 'caf\u00e9', 'tab\there']) {
    const res = await client.post('/perform', { label: 'bad-key' }, { key: project.secretKey, headers: { 'Idempotency-Key': key } });
    expect(res.status).toBe(400);
  }
  expect(performed).not.toContain('bad-key');
});

it('treats an expired key as new', async () => {
  const { project } = await accountWithProject(stack.http);
  const headers = { 'Idempotency-Key': 'will-expire' };
  expect((await client.post('/perform', { label: 'expiring' }, { key: project.secretKey, headers })).status).toBe(200);
  await stack.orm.em.fork().execute(`update idempotency_keys set expires_at = now() - interval '1 second' where key = 'will-expire'`);
  expect((await client.post('/perform', { label: 'expiring' }, { key: project.secretKey, headers })).status).toBe(200);
  expect(performed.filter((l) => l === 'expiring')).toHaveLength(2);
});

it('deletes expired keys from the hourly Temporal schedule', async () => {
  const { project } = await accountWithProject(stack.http);
  const em = stack.orm.em.fork();
  await em.execute(
    `insert into idempotency_keys (project_id, key, request, status_code, expires_at) values
       (?, 'old', 'POST /v1/send', 200, now() - interval '1 hour'),
       (?, 'fresh', 'POST /v1/send', 200, now() + interval '1 hour')`,
    [project.id, project.id],
  );
  const schedule = stack.temporal.schedule.getHandle(hourlyCleanupScheduleId(stack.config.temporalTaskQueue));
  const description = await schedule.describe();
  expect(description.spec.intervals?.[0].every).toBe(3_600_000);
  await schedule.trigger();
  await eventually(async () => {
    const keys = await stack.orm.em.fork().execute(`select key from idempotency_keys where project_id = ?`, [project.id]);
    expect(keys.map((k) => k.key)).toEqual(['fresh']);
  });
});
