import fs from 'node:fs';
import path from 'node:path';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, createProject, signUp } from '../support/accounts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { loadConfig } from '../../lib/config';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { sendWebhook } from '../../lib/webhooks/webhookRequest';
import { signWebhookBody, verifyWebhookSignature } from '../../lib/webhooks/webhookSignature';
import { webhookAddressPolicyFromConfig } from '../../lib/webhooks/webhookAddressPolicy';
import { webhookSecretRepository } from '../../db/repositories/webhookSecretRepository';

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

const security = (projectId: string, cookie: string) => stack.http.get(`/users/@me/projects/${projectId}/security`, { cookie });

describe('the project webhook secret', () => {
  it('is shown to OWNER and ADMIN in the security overview, never to MEMBER', async () => {
    const { account: owner, project } = await accountWithProject(stack.http);
    const admin = await signUp(stack.http);
    const member = await signUp(stack.http);
    expect((await stack.http.post(`/projects/${project.id}/members`, { email: admin.email, role: 'ADMIN' }, { cookie: owner.cookie })).status).toBe(201);
    expect((await stack.http.post(`/projects/${project.id}/members`, { email: member.email, role: 'MEMBER' }, { cookie: owner.cookie })).status).toBe(201);

    const asOwner = await security(project.id, owner.cookie);
    expect(asOwner.status).toBe(200);
    const secret = asOwner.body.webhooks.signingSecret;
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(asOwner.body.webhooks).toEqual({ signatureHeader: 'X-Mailroom-Signature', signingSecret: secret, signingSecretVisibleTo: ['OWNER', 'ADMIN'] });
    expect((await stack.http.get(`/projects/${project.id}/security`, { cookie: owner.cookie })).body.webhooks.signingSecret).toBe(secret);
    expect((await security(project.id, admin.cookie)).body.webhooks.signingSecret).toBe(secret);

    for (const path of [`/users/@me/projects/${project.id}/security`, `/projects/${project.id}/security`]) {
      const asMember = await stack.http.get(path, { cookie: member.cookie });
      expect(asMember.status).toBe(200);
      expect(asMember.body.webhooks.signingSecret).toBeNull();
      expect(JSON.stringify(asMember.body)).not.toContain(secret);
    }
    // Not in the project list either.
    expect(JSON.stringify((await stack.http.get('/users/@me/projects', { cookie: owner.cookie })).body)).not.toContain(secret);

    const stranger = await signUp(stack.http);
    expect((await security(project.id, stranger.cookie)).status).toBe(404);
  });

  it('differs per project and is rotated by OWNER or ADMIN only', async () => {
    const { account: owner, project } = await accountWithProject(stack.http);
    const other = await createProject(stack.http, owner, 'Other');
    const first = (await security(project.id, owner.cookie)).body.webhooks.signingSecret;
    expect((await security(other.id, owner.cookie)).body.webhooks.signingSecret).not.toBe(first);

    const member = await signUp(stack.http);
    await stack.http.post(`/projects/${project.id}/members`, { email: member.email, role: 'MEMBER' }, { cookie: owner.cookie });
    const refused = await stack.http.post(`/users/@me/projects/${project.id}/regenerate-webhook-secret`, {}, { cookie: member.cookie });
    expect(refused.status).toBe(403);

    const rotated = await stack.http.post(`/users/@me/projects/${project.id}/regenerate-webhook-secret`, {}, { cookie: owner.cookie });
    expect(rotated.status).toBe(200);
    expect(rotated.body.webhookSecret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(rotated.body.webhookSecret).not.toBe(first);
    expect((await security(project.id, owner.cookie)).body.webhooks.signingSecret).toBe(rotated.body.webhookSecret);
    expect(await webhookSecretRepository.find(stack.orm.em.fork(), project.id)).toBe(rotated.body.webhookSecret);
  });

  it('signs requests that verify with the secret the member reads', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const shown = (await security(project.id, account.cookie)).body.webhooks.signingSecret;
    // What the WEBHOOK activity does: the project's secret, the configured policy and resolver.
    const secret = (await webhookSecretRepository.find(stack.orm.em.fork(), project.id))!;
    const body = JSON.stringify({ event: { name: 'signup' }, contact: { email: 'a@example.com' } });
    await sendWebhook({
      url: `${receiver.url}/verify`,
      body,
      secret,
      resolver: dnsResolverFromConfig(stack.config),
      ...webhookAddressPolicyFromConfig(stack.config),
    });
    const [received] = receiver.requests.filter((r) => r.path === '/verify');
    expect(verifyWebhookSignature(received.headers['x-mailroom-signature'] as string, received.body, shown)).toMatchObject({ valid: true });
  });
});

describe('verifyWebhookSignature', () => {
  const secret = 'whsec_abc';
  const body = '{"a":1}';

  it('accepts the signature within the tolerance and refuses old, future, malformed and missing ones', () => {
    const now = 1_800_000_000;
    const header = signWebhookBody(body, secret, now);
    expect(verifyWebhookSignature(header, body, secret, 300, now + 299)).toEqual({ valid: true, timestamp: now });
    expect(verifyWebhookSignature(header, Buffer.from(body), secret, 300, now)).toEqual({ valid: true, timestamp: now });
    expect(verifyWebhookSignature(header, body, secret, 300, now + 301)).toMatchObject({ valid: false });
    expect(verifyWebhookSignature(header, body, secret, 300, now - 301)).toMatchObject({ valid: false });
    expect(verifyWebhookSignature(undefined, body, secret, 300, now)).toMatchObject({ valid: false });
    for (const bad of ['', 'garbage', `t=${now}`, `v1=${'0'.repeat(64)}`, `t=abc,v1=${'0'.repeat(64)}`, `t=${now},v1=zz`, `t=${now},v1=${'0'.repeat(64)}`]) {
      expect([bad, verifyWebhookSignature(bad, body, secret, 300, now).valid]).toEqual([bad, false]);
    }
    // A header carrying the old and the new secret's signatures (rotation) verifies with either.
    const both = `${header},v1=${signWebhookBody(body, 'whsec_new', now).split('v1=')[1]}`;
    expect(verifyWebhookSignature(both, body, secret, 300, now).valid).toBe(true);
    expect(verifyWebhookSignature(both, body, 'whsec_new', 300, now).valid).toBe(true);
  });

  it('the signature is HMAC-SHA256 of "t.body" in hex, as the README documents', async () => {
    const crypto = await import('node:crypto');
    const expected = crypto.createHmac('sha256', secret).update(`1700000000.${body}`).digest('hex');
    expect(signWebhookBody(body, secret, 1_700_000_000)).toBe(`t=1700000000,v1=${expected}`);
  });
});

describe("the README's verification snippet", () => {
  it('accepts what Mailroom signs and refuses the rest', () => {
    const readme = fs.readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Webhook signatures'));
    const code = /```js\n([\s\S]*?)```/.exec(section)![1];
    expect(code).toContain('function verifyMailroomSignature');
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- runs the README's own sample code, to prove it verifies
    const verify = new Function('require', `${code}\nreturn verifyMailroomSignature;`)(require) as (
      header: string | undefined,
      rawBody: Buffer,
      secret: string,
    ) => boolean;
    const body = Buffer.from('{"contact":{"email":"ü@example.com"}}');
    const header = signWebhookBody(body, 'whsec_readme');
    expect(verify(header, body, 'whsec_readme')).toBe(true);
    expect(verify(header, body, 'whsec_other')).toBe(false);
    expect(verify(header, Buffer.from('{}'), 'whsec_readme')).toBe(false);
    expect(verify(signWebhookBody(body, 'whsec_readme', Math.floor(Date.now() / 1000) - 600), body, 'whsec_readme')).toBe(false);
    expect(verify(undefined, body, 'whsec_readme')).toBe(false);
    expect(verify('t=1,v1=zz', body, 'whsec_readme')).toBe(false);
  });
});

describe('WEBHOOK_ALLOWED_NETWORKS', () => {
  it('is read as CIDR blocks and refused at start when it is not', () => {
    const base = { SECRET: 'x'.repeat(32), DATA_DIR: stack.config.dataDir };
    expect(loadConfig({ ...base, WEBHOOK_ALLOWED_NETWORKS: '10.0.5.0/24, fd12::/64,127.0.0.1/32' }).webhookAllowedNetworks).toEqual([
      '10.0.5.0/24',
      'fd12::/64',
      '127.0.0.1/32',
    ]);
    expect(loadConfig(base)).toMatchObject({ webhookAllowedNetworks: [], webhookAllowPrivate: false });
    for (const bad of ['10.0.0.1', '10.0.0.0/33', 'intranet', '10.0.0.0/8;']) {
      expect(() => loadConfig({ ...base, WEBHOOK_ALLOWED_NETWORKS: bad })).toThrow(/WEBHOOK_ALLOWED_NETWORKS/);
    }
  });
});
