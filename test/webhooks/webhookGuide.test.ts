import fs from 'node:fs';
import path from 'node:path';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { eventually } from '../support/eventually';
import { createEndpoint } from '../support/webhookEndpoints';

/**
 * docs/guides/webhooks.md's two verification snippets, run as written against a message Mailroom
 * really sent: they accept it, and refuse it altered, under another secret, or too old. The
 * dashboard's Webhooks page shows the same two, and must keep showing the guide's code.
 */
let stack: TestStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

const guide = fs.readFileSync(path.join(__dirname, '../../docs/guides/webhooks.md'), 'utf8');
const section = guide.slice(guide.indexOf('## Verifying a message'));
const [handWritten, withPackage] = [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);

type Headers = Record<string, string | string[] | undefined>;
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- runs the guide's own sample code, to prove it verifies
const verifyWebhook = new Function('require', `${handWritten}\nreturn verifyWebhook;`)(require) as (
  headers: Headers,
  rawBody: Buffer,
  secret: string,
) => boolean;
const receiveWith = (secret: string) =>
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the same for the standardwebhooks snippet
  new Function('require', 'process', `${withPackage}\nreturn receive;`)(require, { env: { MAILROOM_WEBHOOK_SECRET: secret } }) as (
    rawBody: Buffer,
    headers: Headers,
  ) => unknown;

it('the snippets verify a real message and refuse a forged one', async () => {
  expect(handWritten).toContain('function verifyWebhook');
  expect(withPackage).toContain("require('standardwebhooks')");
  const { project } = await accountWithProject(stack.http);
  const endpoint = await createEndpoint(stack, project, `${receiver.url}/guide`, ['*']);
  const rotated = await stack.http.post(`/webhook-endpoints/${endpoint.id}/rotate-secret`, undefined, { key: project.secretKey });
  const test = await stack.http.post(`/webhook-endpoints/${endpoint.id}/test`, undefined, { key: project.secretKey });
  expect(test.status).toBe(202);

  const request = await eventually(() => {
    const found = receiver.requests.find((r) => r.path === '/guide');
    if (!found) throw new Error('not arrived yet');
    return found;
  });
  const raw = Buffer.from(request.body);
  expect(request.headers['webhook-id']).toBe(test.body.messageId);
  for (const secret of [endpoint.secret, rotated.body.secret as string]) {
    expect(verifyWebhook(request.headers, raw, secret)).toBe(true);
    expect(receiveWith(secret)(raw, request.headers)).toMatchObject({ type: 'webhook.test', source: 'system' });
  }

  const forged = Buffer.from(request.body.replace('webhook.test', 'webhook.tesT'));
  expect(verifyWebhook(request.headers, forged, endpoint.secret)).toBe(false);
  expect(() => receiveWith(endpoint.secret)(forged, request.headers)).toThrow();
  const otherSecret = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
  expect(verifyWebhook(request.headers, raw, otherSecret)).toBe(false);
  expect(() => receiveWith(otherSecret)(raw, request.headers)).toThrow();
  const old = { ...request.headers, 'webhook-timestamp': String(Number(request.headers['webhook-timestamp']) - 600) };
  expect(verifyWebhook(old, raw, endpoint.secret)).toBe(false);
  expect(() => receiveWith(endpoint.secret)(raw, old)).toThrow();
  expect(verifyWebhook({}, raw, endpoint.secret)).toBe(false);
});

it("the dashboard's Webhooks page shows the guide's very code", () => {
  // Read as text (web/ is type-checked for the browser): the snippets are template literals there.
  const page = fs
    .readFileSync(path.join(__dirname, '../../web/src/developers/webhookSnippets.ts'), 'utf8')
    .replace(/\\`/g, '`')
    .replace(/\\\$\{/g, '${');
  expect(page).toContain(handWritten.trim());
  expect(page).toContain(withPackage.trim());
});
