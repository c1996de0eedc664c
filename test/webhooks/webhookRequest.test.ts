import fs from 'node:fs';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { makeTestCertificates, type TestCertificates } from '../support/certificates';
import { findFreePort } from '../../lib/freePort';
import { createDnsResolver, type DnsResolver } from '../../lib/dns/dnsResolver';
import { sendWebhook, WebhookError, webhookLimits, type WebhookRequest } from '../../lib/webhooks/webhookRequest';
import { verifyWebhookSignature } from '../../lib/webhooks/webhookSignature';
import { checkWebhookAddress } from '../../lib/webhooks/webhookAddressPolicy';

/**
 * The WEBHOOK step's HTTP client against real local receivers and a real DNS server. Receivers
 * listen on loopback, so tests that must reach one either set allowPrivate (how the execution
 * tests reach theirs) or allow exactly 127.0.0.1/32 through allowedNetworks; the rest of 127/8
 * (127.0.0.2, where a second receiver listens) then stands for "a private address" that must
 * never be reached.
 */
let dns: TestDnsServer;
let resolver: DnsResolver;
let receiver: WebhookReceiver;
/** On 127.0.0.2: the private service an attacker wants to reach. Must never get a request. */
let privateService: WebhookReceiver;

beforeAll(async () => {
  dns = await startTestDnsServer();
  resolver = createDnsResolver({ servers: [dns.address], timeoutMs: 500, tries: 1 });
  receiver = await startWebhookReceiver();
  privateService = await startWebhookReceiver({ host: '127.0.0.2', port: receiver.port });
});

afterAll(async () => {
  await receiver?.close();
  await privateService?.close();
  await dns?.close();
});

afterEach(() => {
  receiver.reset();
  privateService.reset();
  dns.failWith(null);
  expect(privateService.requests).toEqual([]);
});

const onlyLoopbackOne = { allowedNetworks: ['127.0.0.1/32'] };

function send(request: Partial<WebhookRequest> & { url: string }) {
  return sendWebhook({ resolver, ...request });
}

async function failure(promise: Promise<unknown>): Promise<WebhookError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookError);
    return err as WebhookError;
  }
  throw new Error('expected the webhook to fail');
}

describe('a signed request', () => {
  it('arrives with the body, headers and a signature the receiver can verify', async () => {
    const body = JSON.stringify({ contact: { email: 'ünïcode@example.com' }, event: { name: 'signup' } });
    const response = await send({
      url: `${receiver.url}/hooks/mailroom?x=1`,
      method: 'POST',
      headers: { 'X-Custom': 'value', Authorization: 'Bearer abc' },
      body,
      secret: 'whsec_test',
      allowPrivate: true,
    });
    expect(response).toMatchObject({ status: 200, body: '{"ok":true}', bodyTruncated: false, redirects: 0, address: '127.0.0.1' });
    expect(response.finalUrl).toBe(`${receiver.url}/hooks/mailroom?x=1`);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.durationMs).toBeGreaterThanOrEqual(0);

    const [received] = receiver.requests;
    expect(received).toMatchObject({ method: 'POST', path: '/hooks/mailroom?x=1', body });
    expect(received.headers).toMatchObject({
      'x-custom': 'value',
      authorization: 'Bearer abc',
      'content-type': 'application/json',
      host: `127.0.0.1:${receiver.port}`,
      'user-agent': 'Mailroom-Webhook/1.0',
    });
    const header = received.headers['x-mailroom-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature(header, received.body, 'whsec_test')).toMatchObject({ valid: true });
    expect(verifyWebhookSignature(header, received.body, 'whsec_other')).toEqual({ valid: false, reason: 'signature does not match the body' });
    expect(verifyWebhookSignature(header, received.body + ' ', 'whsec_test')).toMatchObject({ valid: false });
  });

  it('sends the other methods, GET without a body, and no signature without a secret', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE'] as const) {
      await send({ url: `${receiver.url}/m`, method, body: method === 'GET' ? undefined : '{}', allowPrivate: true });
    }
    expect(receiver.requests.map((r) => [r.method, r.body])).toEqual([
      ['GET', ''],
      ['PUT', '{}'],
      ['PATCH', '{}'],
      ['DELETE', '{}'],
    ]);
    expect(receiver.requests.every((r) => r.headers['x-mailroom-signature'] === undefined)).toBe(true);
    const error = await failure(send({ url: `${receiver.url}/m`, method: 'GET', body: '{}', allowPrivate: true }));
    expect(error).toMatchObject({ kind: 'INVALID_REQUEST', retryable: false });
  });

  it('reaches a hostname that resolves through DNS_SERVERS, with Host naming it', async () => {
    dns.setA('hooks.customer.test', ['127.0.0.1']);
    const response = await send({ url: `http://hooks.customer.test:${receiver.port}/in`, body: '{}', ...onlyLoopbackOne });
    expect(response.status).toBe(200);
    expect(receiver.requests[0].headers.host).toBe(`hooks.customer.test:${receiver.port}`);
  });
});

describe('retryable and final failures', () => {
  it('classifies 5xx, 408 and 429 as retryable and other 4xx as final, keeping the answer', async () => {
    const cases: Array<[number, boolean]> = [
      [500, true],
      [502, true],
      [503, true],
      [408, true],
      [429, true],
      [400, false],
      [401, false],
      [404, false],
      [410, false],
      [422, false],
    ];
    for (const [status] of cases) receiver.on(`/status/${status}`, (_req, res) => res.writeHead(status).end(`status ${status}`));
    for (const [status, retryable] of cases) {
      const error = await failure(send({ url: `${receiver.url}/status/${status}`, body: '{}', allowPrivate: true }));
      expect(error).toMatchObject({ kind: 'HTTP_ERROR', status, retryable });
      expect(error.response?.body).toBe(`status ${status}`);
    }
  });

  it('honours the timeout while the receiver does not answer (retryable), and hangs up on it', async () => {
    // The receiver takes the request and never answers: only the client's timeout can end the
    // attempt. (How close to timeoutMs it ends is a figure of `npm run bench:platform`.)
    let hungUp!: () => void;
    const connectionClosed = new Promise<void>((resolve) => (hungUp = resolve));
    receiver.on('/slow', (_req, res) => res.on('close', () => hungUp()));
    const error = await failure(send({ url: `${receiver.url}/slow`, body: '{}', allowPrivate: true, timeoutMs: 300 }));
    expect(error).toMatchObject({ kind: 'TIMEOUT', retryable: true, message: 'No complete answer within 300 ms' });
    expect(receiver.requests).toHaveLength(1);
    // The attempt is over for the receiver too: the connection is closed, not left open.
    await connectionClosed;
  });

  it('honours the timeout while the receiver trickles its answer', async () => {
    receiver.on('/trickle', (_req, res) => {
      res.writeHead(200);
      const interval = setInterval(() => (res.destroyed ? clearInterval(interval) : res.write('.')), 50);
      res.on('close', () => clearInterval(interval));
    });
    const error = await failure(send({ url: `${receiver.url}/trickle`, body: '{}', allowPrivate: true, timeoutMs: 300 }));
    expect(error).toMatchObject({ kind: 'TIMEOUT', retryable: true });
  });

  it('classifies a refused connection and a reset as retryable network errors', async () => {
    const closedPort = await findFreePort();
    const refused = await failure(send({ url: `http://127.0.0.1:${closedPort}/`, body: '{}', allowPrivate: true }));
    expect(refused).toMatchObject({ kind: 'NETWORK_ERROR', retryable: true, address: '127.0.0.1' });
    expect(refused.message).toContain('ECONNREFUSED');

    receiver.on('/reset', (_req, res) => res.socket?.destroy());
    const reset = await failure(send({ url: `${receiver.url}/reset`, body: '{}', allowPrivate: true }));
    expect(reset).toMatchObject({ kind: 'NETWORK_ERROR', retryable: true });
  });

  it('tells a name without addresses (final) from DNS that cannot answer (retryable)', async () => {
    const missing = await failure(send({ url: 'http://no-such-host.test/', body: '{}', allowPrivate: true }));
    expect(missing).toMatchObject({ kind: 'DNS_FAILURE', retryable: false });
    dns.failWith('SERVFAIL');
    const servfail = await failure(send({ url: 'http://any-host.test/', body: '{}', allowPrivate: true }));
    expect(servfail).toMatchObject({ kind: 'DNS_FAILURE', retryable: true });
  });
});

describe('addresses that are refused', () => {
  const literals = [
    'http://127.0.0.1/',
    'http://127.1/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://[::1]/',
    'http://0.0.0.0/',
    'http://[::]/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://169.254.1.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/',
    'http://[fc00::1]/',
    'http://[fd00:ec2::254]/',
    'http://224.0.0.1/',
    'http://255.255.255.255/',
    'http://[ff02::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[64:ff9b::a00:1]/',
    'http://[2002:7f00:1::]/',
    'http://[::127.0.0.1]/',
    'http://localhost/',
    'http://api.localhost/',
    'http://metadata.google.internal/computeMetadata/v1/',
  ];

  it.each(literals)('refuses %s before connecting', async (url) => {
    const error = await failure(send({ url, body: '{}' }));
    expect(error).toMatchObject({ kind: 'ADDRESS_REFUSED', retryable: false });
  });

  it('refuses a hostname resolving to loopback, and one with any private answer among public ones', async () => {
    dns.setA('evil.test', ['127.0.0.1']);
    const loopback = await failure(send({ url: `http://evil.test:${receiver.port}/`, body: '{}' }));
    expect(loopback).toMatchObject({ kind: 'ADDRESS_REFUSED', retryable: false, address: '127.0.0.1' });
    expect(loopback.message).toContain('evil.test resolves to 127.0.0.1');

    dns.setA('mixed.test', ['8.8.8.8', '10.1.2.3']);
    const mixed = await failure(send({ url: 'http://mixed.test/', body: '{}' }));
    expect(mixed).toMatchObject({ kind: 'ADDRESS_REFUSED', address: '10.1.2.3' });

    dns.setA('v6.test', ['8.8.8.8']);
    dns.setAaaa('v6.test', ['::ffff:127.0.0.1']);
    const mapped = await failure(send({ url: 'http://v6.test/', body: '{}' }));
    expect(mapped).toMatchObject({ kind: 'ADDRESS_REFUSED' });
    expect(receiver.requests).toEqual([]);
  });

  it('keeps refusing metadata addresses when private addresses are allowed', async () => {
    for (const url of ['http://169.254.169.254/', 'http://[::ffff:169.254.169.254]/', 'http://[fd00:ec2::254]/', 'http://metadata.google.internal/']) {
      expect(await failure(send({ url, allowPrivate: true }))).toMatchObject({ kind: 'ADDRESS_REFUSED' });
    }
    dns.setA('meta.test', ['169.254.169.254']);
    expect(await failure(send({ url: 'http://meta.test/', allowPrivate: true }))).toMatchObject({ kind: 'ADDRESS_REFUSED' });
  });

  it('allows public unicast literals (the policy alone: nothing here is reachable)', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect([address, checkWebhookAddress(address)]).toEqual([address, { allowed: true }]);
    }
    for (const address of ['192.0.2.1', '198.51.100.7', '203.0.113.9', '240.0.0.1', '2001:db8::1', '2001::1', '64:ff9b:1::1', '100::1', '::127.0.0.1']) {
      expect([address, checkWebhookAddress(address).allowed]).toEqual([address, false]);
    }
    expect(checkWebhookAddress('10.0.5.7', { allowedNetworks: ['10.0.5.0/24'] })).toEqual({ allowed: true });
    expect(checkWebhookAddress('10.0.6.7', { allowedNetworks: ['10.0.5.0/24'] }).allowed).toBe(false);
    expect(checkWebhookAddress('::ffff:10.0.5.7', { allowedNetworks: ['10.0.5.0/24'] })).toEqual({ allowed: true });
  });
});

describe('DNS rebinding', () => {
  it('connects to the address it checked, even when the name answers differently a moment later', async () => {
    // First answer allowed (127.0.0.1 stands in for a public address), every later one private.
    dns.setASequence('rebind.test', [['127.0.0.1'], ['127.0.0.2']]);
    const questionsBefore = dns.questions.filter((q) => q === 'A rebind.test').length;
    const response = await send({ url: `http://rebind.test:${receiver.port}/hook`, body: '{"n":1}', ...onlyLoopbackOne });
    expect(response).toMatchObject({ status: 200, address: '127.0.0.1' });
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0].localAddress).toBe('127.0.0.1');
    // Asked once: nothing resolved the name a second time to connect.
    expect(dns.questions.filter((q) => q === 'A rebind.test').length - questionsBefore).toBe(1);

    // The next call sees the rebound answer, checks it, and refuses without connecting.
    const error = await failure(send({ url: `http://rebind.test:${receiver.port}/hook`, body: '{"n":2}', ...onlyLoopbackOne }));
    expect(error).toMatchObject({ kind: 'ADDRESS_REFUSED', address: '127.0.0.2' });
    expect(receiver.requests).toHaveLength(1);
    expect(privateService.requests).toEqual([]);
  });

  it('pins the connection when every address is allowed (the answer changes between two receivers)', async () => {
    dns.setASequence('flip.test', [['127.0.0.2'], ['127.0.0.1']]);
    const response = await send({ url: `http://flip.test:${receiver.port}/pinned`, body: '{}', allowPrivate: true });
    expect(response.address).toBe('127.0.0.2');
    expect(privateService.requests.map((r) => r.localAddress)).toEqual(['127.0.0.2']);
    expect(receiver.requests).toEqual([]);
    privateService.reset();
  });
});

describe('redirects', () => {
  it('follows up to five redirects, re-checking each hop, and reports the final URL', async () => {
    dns.setA('next.test', ['127.0.0.1']);
    for (let i = 0; i < 5; i++) receiver.on(`/r${i}`, (_req, res) => res.writeHead(307, { location: `http://next.test:${receiver.port}/r${i + 1}` }).end());
    receiver.on('/r5', (_req, res) => res.writeHead(200).end('done'));
    const response = await send({ url: `${receiver.url}/r0`, body: '{"a":1}', secret: 's', ...onlyLoopbackOne });
    expect(response).toMatchObject({ status: 200, body: 'done', redirects: 5, finalUrl: `http://next.test:${receiver.port}/r5` });
    // 307 repeats the method and body; every hop is signed.
    expect(receiver.requests.map((r) => [r.method, r.body])).toEqual(Array(6).fill(['POST', '{"a":1}']));
    for (const r of receiver.requests) expect(verifyWebhookSignature(r.headers['x-mailroom-signature'] as string, r.body, 's').valid).toBe(true);

    receiver.on('/r5', (_req, res) => res.writeHead(302, { location: '/r6' }).end());
    const tooMany = await failure(send({ url: `${receiver.url}/r0`, body: '{}', ...onlyLoopbackOne }));
    expect(tooMany).toMatchObject({ kind: 'TOO_MANY_REDIRECTS', retryable: false });
  });

  it('turns a 303 into a GET without body and drops credentials on another origin', async () => {
    dns.setA('other.test', ['127.0.0.1']);
    receiver.on('/see-other', (_req, res) => res.writeHead(303, { location: `http://other.test:${receiver.port}/landing` }).end());
    await send({ url: `${receiver.url}/see-other`, body: '{}', headers: { Authorization: 'Bearer t', 'X-Keep': '1' }, allowPrivate: true });
    const [first, second] = receiver.requests;
    expect(first).toMatchObject({ method: 'POST', body: '{}' });
    expect(first.headers.authorization).toBe('Bearer t');
    expect(second).toMatchObject({ method: 'GET', body: '', path: '/landing' });
    expect(second.headers.authorization).toBeUndefined();
    expect(second.headers['x-keep']).toBe('1');
  });

  it('refuses a redirect to a private address, literal or by name, without contacting it', async () => {
    dns.setA('internal.test', ['127.0.0.2']);
    for (const location of [
      `http://127.0.0.2:${receiver.port}/admin`,
      `http://internal.test:${receiver.port}/admin`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.2]/',
    ]) {
      receiver.on('/go', (_req, res) => res.writeHead(302, { location }).end());
      const error = await failure(send({ url: `${receiver.url}/go`, body: '{}', ...onlyLoopbackOne }));
      expect([location, error.kind, error.retryable]).toEqual([location, 'ADDRESS_REFUSED', false]);
    }
    expect(privateService.requests).toEqual([]);
  });

  it('refuses redirects to other schemes', async () => {
    receiver.on('/ftp', (_req, res) => res.writeHead(301, { location: 'file:///etc/passwd' }).end());
    expect(await failure(send({ url: `${receiver.url}/ftp`, allowPrivate: true }))).toMatchObject({ kind: 'BAD_REDIRECT', retryable: false });
  });
});

describe('bounds and bad input', () => {
  it('truncates a large answer and refuses a body over the limit', async () => {
    receiver.on('/big', (_req, res) => res.writeHead(200).end('é'.repeat(200_000)));
    const response = await send({ url: `${receiver.url}/big`, body: '{}', allowPrivate: true });
    expect(response.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(response.body)).toBeLessThanOrEqual(webhookLimits.maxResponseBodyBytes + 3);

    const error = await failure(send({ url: `${receiver.url}/x`, body: 'x'.repeat(webhookLimits.maxRequestBodyBytes + 1), allowPrivate: true }));
    expect(error).toMatchObject({ kind: 'INVALID_REQUEST', retryable: false });
    expect(receiver.requests.map((r) => r.path)).toEqual(['/big']);
  });

  it('refuses CR/LF and other bad headers, bad URLs and bad methods before any request', async () => {
    const bad: Array<Partial<WebhookRequest>> = [
      { headers: { 'X-Evil': 'a\r\nX-Injected: 1' } },
      { headers: { 'X-Evil': 'a\nb' } },
      { headers: { 'X-Evil\r\nX-Injected': '1' } },
      { headers: { 'Bad Name': '1' } },
      { headers: { Host: 'other.example' } },
      { headers: { 'Content-Length': '5' } },
      { headers: { 'X-Mailroom-Signature': 't=1,v1=00' } },
      { headers: { 'X-Unicode': 'snow ☃' } },
      { headers: { 'X-Number': 5 as unknown as string } },
      { url: `${receiver.url}/a\r\nX-Injected: 1` },
      { url: 'ftp://example.com/' },
      { url: 'not a url' },
      { url: '' },
      { url: 'http://user:pass@example.com/' },
      { url: 'http://example.com:0/' },
      { url: `http://example.com/${'a'.repeat(5000)}` },
      { method: 'TRACE' as 'GET' },
      { timeoutMs: 0 },
    ];
    for (const override of bad) {
      const error = await failure(send({ url: `${receiver.url}/x`, body: '{}', allowPrivate: true, ...override }));
      expect([override, error.kind, error.retryable]).toEqual([override, 'INVALID_REQUEST', false]);
    }
    expect(receiver.requests).toEqual([]);
  });
});

describe('HTTPS', () => {
  let certs: TestCertificates;
  let secure: WebhookReceiver;

  beforeAll(async () => {
    certs = makeTestCertificates();
    secure = await startWebhookReceiver({ tls: { key: fs.readFileSync(certs.serverKey), cert: fs.readFileSync(certs.serverCert) } });
  });

  afterAll(async () => {
    await secure?.close();
    certs?.remove();
  });

  it('checks the certificate against the name in the URL, not the address connected to', async () => {
    const ca = fs.readFileSync(certs.caCert);
    // The certificate names localhost and 127.0.0.1.
    const ok = await send({ url: `https://localhost:${secure.port}/s`, body: '{}', allowPrivate: true, extraCaCertificate: ca });
    expect(ok.status).toBe(200);
    expect(secure.requests[0].headers.host).toBe(`localhost:${secure.port}`);

    // Same address, another name: the certificate does not cover it.
    dns.setA('not-in-cert.test', ['127.0.0.1']);
    const wrongName = await failure(send({ url: `https://not-in-cert.test:${secure.port}/s`, body: '{}', allowPrivate: true, extraCaCertificate: ca }));
    expect(wrongName).toMatchObject({ kind: 'TLS_ERROR', retryable: false });

    // Without the test CA the certificate is not trusted.
    const untrusted = await failure(send({ url: `https://localhost:${secure.port}/s`, body: '{}', allowPrivate: true }));
    expect(untrusted).toMatchObject({ kind: 'TLS_ERROR', retryable: false });
    expect(secure.requests).toHaveLength(1);
  });
});
