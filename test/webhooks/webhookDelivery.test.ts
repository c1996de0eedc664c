import { Webhook } from 'standardwebhooks';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhookReceiver';
import { eventually } from '../support/eventually';
import { createEndpoint, signedWith, type TestEndpoint } from '../support/webhookEndpoints';
import { webhookDeliveryWorkflowId } from '../../temporal/webhookDeliveryStart';
import { listRuns } from '../support/temporalRuns';
import { applyRetention } from '../../services/retention/retentionPass';

/**
 * Outbound webhooks (contract 18) over real HTTP: what a receiver gets, signatures, retries with
 * the same webhook-id, 410, manual retry, rotation, pattern filtering, deletion, and attempts that
 * end badly (slow, refused redirect, redirect loop, huge answer), each in bounded time.
 */

let stack: TestStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack({
    env: {
      // The receiver's address is allowed; any other loopback address (127.0.0.2) stays refused.
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
      WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,1,1',
      // No attempt here ends by its timeout, however slow the machine: the slow endpoint's attempts
      // hang until that test answers them, within its 100 s. The timeout itself (15 s by default)
      // is proven on a stack of its own below.
      WEBHOOK_ATTEMPT_TIMEOUT_MS: '120000',
    },
  });
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

let pathCount = 0;
/** A receiver path of its own per endpoint, so tests never see each other's requests. */
function freshPath(): string {
  return `/hook-${++pathCount}`;
}
const requestsTo = (path: string) => receiver.requests.filter((r) => r.path === path);
async function arrived(path: string, count: number, timeoutMs = 20_000): Promise<ReceivedRequest[]> {
  return eventually(() => {
    const got = requestsTo(path);
    if (got.length < count) throw new Error(`${got.length} of ${count} requests at ${path}`);
    return got;
  }, timeoutMs);
}

const track = (project: TestProject, event: string, email = 'ada@example.com', data?: Record<string, unknown>) =>
  stack.http.post('/v1/track', { event, email, ...(data ? { data } : {}) }, { key: project.publicKey }).then((res) => {
    expect(res.status).toBe(200);
    return res.body.data as { event: string; contact: string };
  });

const messagesOf = async (project: TestProject, endpoint: TestEndpoint, query = '', on: TestStack = stack) => {
  const res = await on.http.get(`/webhook-endpoints/${endpoint.id}/messages${query}`, { key: project.secretKey });
  expect(res.status).toBe(200);
  return res.body.data as Array<{
    id: string;
    status: string;
    eventType: string;
    attempts: Array<{ statusCode: number | null; error: string | null; durationMs: number }>;
  }>;
};

const endpointOf = async (project: TestProject, endpoint: TestEndpoint) =>
  (await stack.http.get(`/webhook-endpoints/${endpoint.id}`, { key: project.secretKey })).body as { enabled: boolean; disabledReason: string | null };

describe('a message', () => {
  it('arrives as contract 18 says, signed so both a dozen lines of HMAC and the standardwebhooks package verify it', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    const tracked = await track(project, 'signed.up', 'ada@example.com', { plan: 'pro' });

    const [request] = await arrived(path, 1);
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('Mailroom-Webhooks/1');
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(signedWith(request, endpoint.secret)).toBe(true);
    const verified = new Webhook(endpoint.secret).verify(request.body, request.headers as Record<string, string>);
    expect(verified).toEqual({
      type: 'signed.up',
      timestamp: expect.any(String),
      source: 'tracked',
      data: {
        event: { id: tracked.event, name: 'signed.up', createdAt: expect.any(String), data: { plan: 'pro' } },
        contact: { id: tracked.contact, email: 'ada@example.com' },
      },
    });
    // A body altered on the way fails verification.
    expect(() => new Webhook(endpoint.secret).verify(request.body.replace('pro', 'free'), request.headers as Record<string, string>)).toThrow();

    const [logged] = await eventually(async () => {
      const list = await messagesOf(project, endpoint);
      if (list[0]?.status !== 'SUCCEEDED') throw new Error('not recorded yet');
      return list;
    });
    expect(logged).toMatchObject({
      id: request.headers['webhook-id'],
      eventType: 'signed.up',
      status: 'SUCCEEDED',
      attempts: [{ statusCode: 200, error: null }],
    });
    // Operators find the endpoint's delivery in the Temporal UI by the project.
    await eventually(async () => {
      const runs = await listRuns(stack.temporal, `ProjectId = "${project.id}"`);
      expect(runs.map((run) => run.workflowId)).toContain(webhookDeliveryWorkflowId(endpoint.id));
    }, 30_000);
  });

  it('goes only to endpoints whose patterns match its name', async () => {
    const { project } = await accountWithProject(stack.http);
    const [emailPath, exactPath, prefixPath, allPath] = [freshPath(), freshPath(), freshPath(), freshPath()];
    const emailOnly = await createEndpoint(stack, project, receiver.url + emailPath, ['email.*']);
    await createEndpoint(stack, project, receiver.url + exactPath, ['order.paid']);
    await createEndpoint(stack, project, receiver.url + prefixPath, ['order.*']);
    await createEndpoint(stack, project, receiver.url + allPath, ['*']);

    await track(project, 'order.paid');
    await track(project, 'order.refunded');
    await track(project, 'orders');

    const all = await arrived(allPath, 3);
    expect(all.map((r) => JSON.parse(r.body).type).sort()).toEqual(['order.paid', 'order.refunded', 'orders']);
    expect((await arrived(prefixPath, 2)).map((r) => JSON.parse(r.body).type).sort()).toEqual(['order.paid', 'order.refunded']);
    expect((await arrived(exactPath, 1)).map((r) => JSON.parse(r.body).type)).toEqual(['order.paid']);
    // Messages are written with their event: none was written for the email.* endpoint, so none can come.
    expect(await messagesOf(project, emailOnly)).toEqual([]);
    // And the others got nothing more than their matches once every message is settled.
    await eventually(async () => {
      for (const path of [exactPath, prefixPath]) if (requestsTo(path).length > (path === exactPath ? 1 : 2)) throw new Error(`too many at ${path}`);
    });
  });
});

describe('connections', () => {
  it('are kept alive and reused across messages, and a receiver that closed them idle still gets every message first time', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    const endpoint = await createEndpoint(stack, project, `${receiver.url}${path}`, ['reused.*']);
    for (let i = 0; i < 30; i++) await track(project, 'reused.first', `first-${i}@example.com`);
    const first = await arrived(path, 30);
    // WEBHOOK_ENDPOINT_CONCURRENCY (10) at most, not one per message.
    expect(new Set(first.map((r) => r.remotePort)).size).toBeLessThanOrEqual(10);

    // The receiver drops the idle ones, as its keep-alive timeout would: the next messages come over new connections.
    receiver.closeIdleConnections();
    await eventually(() => expect(receiver.openConnections()).toBe(0));
    for (let i = 0; i < 5; i++) await track(project, 'reused.second', `second-${i}@example.com`);
    await arrived(path, 35);
    const messages = await eventually(async () => {
      const all = await messagesOf(project, endpoint, '?limit=100');
      expect(all.filter((m) => m.status === 'SUCCEEDED')).toHaveLength(35);
      return all;
    });
    expect(messages.flatMap((m) => m.attempts).filter((a) => a.error !== null)).toEqual([]);
  });
});

describe('retries', () => {
  it('come with the same webhook-id until a 2xx, and the log shows every attempt', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    let answered = 0;
    receiver.on(path, (_req, res) => {
      answered++;
      res.writeHead(answered <= 2 ? 500 : 204).end();
    });
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'retried.event');

    const requests = await arrived(path, 3);
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(requests.every((r) => signedWith(r, endpoint.secret))).toBe(true);
    const [message] = await eventually(async () => {
      const list = await messagesOf(project, endpoint);
      if (list[0]?.status !== 'SUCCEEDED') throw new Error('not succeeded yet');
      return list;
    });
    expect(message.attempts.map((a) => a.statusCode)).toEqual([500, 500, 204]);
    expect(message.attempts[0].error).toMatch(/500/);
  });

  it('end after the last delay: the message is FAILED; a manual retry sends it once more with the same id', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    let healthy = false;
    receiver.on(path, (_req, res) => res.writeHead(healthy ? 200 : 503).end());
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'never.accepted');

    const [failed] = await eventually(async () => {
      const list = await messagesOf(project, endpoint, '?status=FAILED');
      if (!list.length) throw new Error('not failed yet');
      return list;
    }, 30_000);
    // Eight attempts: the first and one after each of the seven delays.
    expect(failed.attempts).toHaveLength(8);
    expect(requestsTo(path)).toHaveLength(8);

    healthy = true;
    const retry = await stack.http.post(`/webhook-endpoints/${endpoint.id}/messages/${failed.id}/retry`, undefined, { key: project.secretKey });
    expect(retry.status).toBe(202);
    const requests = await arrived(path, 9);
    expect(requests[8].headers['webhook-id']).toBe(failed.id);
    await eventually(async () => {
      const [message] = await messagesOf(project, endpoint);
      if (message?.status !== 'SUCCEEDED') throw new Error('not succeeded yet');
      expect(message.attempts.at(-1)!.statusCode).toBe(200);
    });
  });
});

describe('the endpoint', () => {
  it('is disabled at once by 410 Gone, gets nothing new, and sends what is pending when re-enabled', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    let gone = true;
    receiver.on(path, (_req, res) => res.writeHead(gone ? 410 : 200).end());
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'first.event');

    const disabled = await eventually(async () => {
      const now = await endpointOf(project, endpoint);
      if (now.enabled) throw new Error('still enabled');
      return now;
    });
    expect(disabled.disabledReason).toMatch(/410/);
    expect(requestsTo(path)).toHaveLength(1);
    // Disabled: an event now writes no message for it.
    await track(project, 'while.disabled');
    const pending = await messagesOf(project, endpoint);
    expect(pending.map((m) => [m.eventType, m.status])).toEqual([['first.event', 'PENDING']]);

    gone = false;
    const enabled = await stack.http.patch(`/webhook-endpoints/${endpoint.id}`, { enabled: true }, { key: project.secretKey });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
    const requests = await arrived(path, 2);
    expect(requests[1].headers['webhook-id']).toBe(pending[0].id);
  });

  it('signs with both secrets for a day after a rotation', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    const rotated = await stack.http.post(`/webhook-endpoints/${endpoint.id}/rotate-secret`, undefined, { key: project.secretKey });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).not.toBe(endpoint.secret);

    await track(project, 'after.rotation');
    const [request] = await arrived(path, 1);
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(signedWith(request, newSecret)).toBe(true);
    expect(signedWith(request, endpoint.secret)).toBe(true);
    new Webhook(newSecret).verify(request.body, request.headers as Record<string, string>);
    new Webhook(endpoint.secret).verify(request.body, request.headers as Record<string, string>);
  });

  it('deleted: its workflow is cancelled and its pending retries are never sent', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    receiver.on(path, (_req, res) => res.writeHead(500).end());
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'doomed.event');
    await arrived(path, 2);

    expect((await stack.http.delete(`/webhook-endpoints/${endpoint.id}`, { key: project.secretKey })).status).toBe(204);
    // Closed only once its run stopped (WAIT_CANCELLATION_COMPLETED): nothing is sent after this.
    const handle = stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(endpoint.id));
    await eventually(async () => {
      const { status } = await handle.describe();
      if (status.name === 'RUNNING') throw new Error('still running');
      expect(['CANCELLED', 'COMPLETED']).toContain(status.name);
    });
    const sentBeforeClose = requestsTo(path).length;
    const [row] = await stack.orm.em.fork().execute(`select count(*)::int as n from webhook_messages where endpoint_id = ?`, [endpoint.id]);
    expect(row.n).toBe(0);

    // Its messages are gone and its workflow closed after its run stopped, so nothing more can come; a
    // later message of another endpoint on the same receiver arriving shows delivery went on meanwhile.
    const laterPath = freshPath();
    await createEndpoint(stack, project, receiver.url + laterPath, ['later.*']);
    await track(project, 'later.event');
    await arrived(laterPath, 1);
    expect(requestsTo(path)).toHaveLength(sentBeforeClose);
  });
});

describe('a slow endpoint', () => {
  it("delays neither another project's endpoint nor the mail", async () => {
    const { project: slowProject } = await accountWithProject(stack.http);
    const { project: other } = await accountWithProject(stack.http);
    const slowPath = freshPath();
    const fastPath = freshPath();
    const hanging: Array<() => void> = [];
    receiver.on(slowPath, (_req, res) => hanging.push(() => res.writeHead(200).end()));
    await createEndpoint(stack, slowProject, receiver.url + slowPath, ['*']);
    await createEndpoint(stack, other, receiver.url + fastPath, ['*']);
    // More than the slow endpoint's concurrency (10): all its attempts hang, and two messages wait.
    // They hang until answered below: this test ends (100 s) before their 120 s attempt timeout.
    for (let i = 0; i < 12; i++) await track(slowProject, 'slow.event', `slow-${i}@example.com`);
    await arrived(slowPath, 10, 30_000);

    await track(other, 'fast.event');
    const sent = await stack.http.post(
      '/v1/send',
      { from: 'hello@outbox.mailroom.localhost', to: 'ada@example.com', subject: 'Not held up', body: '<p>Hi</p>' },
      { key: slowProject.secretKey },
    );
    expect(sent.status).toBe(200);
    const emailId = sent.body.data.emails[0].email as string;
    await arrived(fastPath, 1, 30_000);
    await eventually(async () => expect((await stack.http.get(`/emails/${emailId}`, { key: slowProject.secretKey })).body.status).toBe('SENT'), 30_000);
    // Both happened while every attempt of the slow endpoint was still waiting for its answer.
    expect(hanging).toHaveLength(10);
    expect(requestsTo(slowPath)).toHaveLength(10);
    hanging.forEach((answer) => answer());
    await arrived(slowPath, 12);
  }, 100_000);
});

describe('an attempt that ends badly ends in bounded time, recorded as failed with its reason', () => {
  async function firstAttempt(project: TestProject, endpoint: TestEndpoint, on: TestStack = stack, timeoutMs = 40_000) {
    return eventually(async () => {
      const [message] = await messagesOf(project, endpoint, '', on);
      const attempt = message?.attempts[0];
      if (!attempt) throw new Error('no attempt yet');
      return attempt;
    }, timeoutMs);
  }

  describe('at the default attempt timeout (a stack of its own: the one above sets 120 s)', () => {
    let timeoutStack: TestStack;
    beforeAll(async () => {
      timeoutStack = await startTestStack({ env: { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' } });
    });
    afterAll(async () => {
      await timeoutStack?.stop();
    });

    it('a receiver slower than 15 s', async () => {
      const { project } = await accountWithProject(timeoutStack.http);
      const path = freshPath();
      const slowAnswers: NodeJS.Timeout[] = [];
      // The first request would be answered after 60 s, past any bound checked below; the retry at once,
      // so no attempt is left hanging when the stack stops.
      receiver.on(path, (_req, res) => {
        if (slowAnswers.length) return void res.writeHead(200).end();
        slowAnswers.push(setTimeout(() => res.writeHead(200).end(), 60_000));
      });
      const endpoint = await createEndpoint(timeoutStack, project, receiver.url + path, ['*']);
      const tracked = await timeoutStack.http.post('/v1/track', { event: 'slow.event', email: 'ada@example.com' }, { key: project.publicKey });
      expect(tracked.status).toBe(200);
      const attempt = await firstAttempt(project, endpoint, timeoutStack, 60_000);
      slowAnswers.forEach(clearTimeout);
      expect(attempt.statusCode).toBeNull();
      expect(attempt.error).toMatch(/within 15000 ms/);
      expect(attempt.durationMs).toBeGreaterThanOrEqual(14_000);
      // Cut at its bound, not at the answer (60 s); the margin is for a loaded machine's late timer.
      expect(attempt.durationMs).toBeLessThan(30_000);
    }, 90_000);
  });

  it('a redirect to an address outside the allowed networks', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    const target = await startWebhookReceiver({ host: '127.0.0.2' });
    try {
      receiver.on(path, (_req, res) => res.writeHead(307, { location: `${target.url}/stolen` }).end());
      const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
      await track(project, 'redirected.event');
      const attempt = await firstAttempt(project, endpoint);
      expect(attempt.error).toMatch(/127\.0\.0\.2|not allowed|refused/i);
      expect(target.requests).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

  it('a redirect loop', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    receiver.on(path, (_req, res) => res.writeHead(307, { location: path }).end());
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'looping.event');
    const attempt = await firstAttempt(project, endpoint);
    expect(attempt.error).toMatch(/redirect/i);
    // The first request and at most five redirects.
    expect(requestsTo(path).length).toBeLessThanOrEqual(6);
  });

  it('a huge answer is read no further than its first kilobytes', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    receiver.on(path, (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      // 200 MB if the client kept reading; it stops early and closes.
      let left = 200;
      const pump = () => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => (left = 0));
      pump();
    });
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'huge.answer');
    const attempt = await firstAttempt(project, endpoint);
    expect(attempt.statusCode).toBe(500);
    expect(attempt.durationMs).toBeLessThan(15_000);
  });
});

describe('the message log', () => {
  it('keeps messages and their attempts 30 days', async () => {
    const { project } = await accountWithProject(stack.http);
    const path = freshPath();
    const endpoint = await createEndpoint(stack, project, receiver.url + path, ['*']);
    await track(project, 'kept.event');
    await arrived(path, 1);
    const em = stack.orm.em.fork();
    await em.execute(
      `insert into webhook_messages (endpoint_id, project_id, event_type, payload, status, created_at)
       select ?, ?, 'aged.' || d, '{}'::jsonb, 'SUCCEEDED', now() - make_interval(days => d) from unnest(array[29, 31, 45]) as d`,
      [endpoint.id, project.id],
    );
    const logger = { info: () => undefined, warn: () => undefined };
    const result = await applyRetention({ orm: stack.orm, settings: stack.config.retention, logger }, 'webhookMessages');
    expect(result).toEqual({ kind: 'webhookMessages', removed: 2, finished: true });
    const left = await messagesOf(project, endpoint);
    expect(left.map((m) => m.eventType).sort()).toEqual(['aged.29', 'kept.event']);
  });
});
