import zlib from 'node:zlib';
import net from 'node:net';
import http from 'node:http';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { MAX_JSON_DEPTH } from '../../lib/untrustedJson';

let stack: TestStack;
let account: TestAccount;
let project: TestProject;
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  ({ account, project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const json = { 'Content-Type': 'application/json' };

/** `{"a":{"a":…{"a":leaf}}}` with `levels` objects. */
function nestedObjects(levels: number, leaf = '1'): string {
  return '{"a":'.repeat(levels) + leaf + '}'.repeat(levels);
}

/** A JSON text whose `field` holds `value` (raw JSON text), inside an object holding `rest`. */
function bodyWith(rest: Record<string, unknown>, field: string, value: string): string {
  const base = JSON.stringify(rest);
  return `${base.slice(0, -1)}${base.length > 2 ? ',' : ''}"${field}":${value}}`;
}

/**
 * Sends the headers and `firstPart` of a body that has more to come, and waits for the answer
 * without sending the rest: resolves with it once it arrives (then drops the connection), so an
 * answer proves the API judged the body while it was still streaming. An API that waited for the
 * whole body would never answer (the test's own timeout ends it).
 */
function answerWhileHoldingTheRest(path: string, headers: Record<string, string>, firstPart: Buffer): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${stack.api.url}${path}`, { method: 'POST', headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        req.destroy();
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : text });
      });
    });
    req.flushHeaders();
    req.write(firstPart);
  });
}

async function contactsTotal(): Promise<number> {
  return (await stack.http.get('/contacts', { key: project.secretKey })).body.total;
}
async function eventsTotal(): Promise<number> {
  return (await stack.http.get('/events', { key: project.secretKey })).body.total;
}

function expectTooDeep(res: { status: number; body: any }, label: string) {
  expect([label, res.status]).toEqual([label, 400]);
  expect(res.body).toMatchObject({
    success: false,
    error: {
      code: 'INVALID_REQUEST_BODY',
      statusCode: 400,
      message: expect.stringContaining(`${MAX_JSON_DEPTH} levels`),
      details: { maxDepth: MAX_JSON_DEPTH },
    },
  });
}

describe('JSON nesting depth', () => {
  it(`refuses bodies nested deeper than ${MAX_JSON_DEPTH} levels with 400 on every JSON endpoint family, writing nothing`, async () => {
    const deep = nestedObjects(5000);
    const existing = await stack.http.post('/contacts', { email: 'existing@example.com' }, { key: project.secretKey });
    const projectsBefore = (await stack.http.get('/users/@me/projects', { cookie: account.cookie })).body;
    const contactsBefore = await contactsTotal();
    const eventsBefore = await eventsTotal();

    const attempts: Array<[string, string, string, Record<string, string>]> = [
      ['POST', '/auth/signup', bodyWith({ email: 'deep-signup@example.com', password: 'long enough password' }, 'profile', deep), {}],
      ['POST', '/auth/login', bodyWith({ email: account.email, password: account.password }, 'x', deep), {}],
      ['POST', '/auth/request-password-reset', bodyWith({ email: account.email }, 'x', deep), {}],
      ['POST', '/users/@me/projects', bodyWith({ name: 'Deep project' }, 'x', deep), { Cookie: account.cookie }],
      ['POST', `/projects/${project.id}/members`, bodyWith({ email: 'someone@example.com', role: 'MEMBER' }, 'x', deep), { Cookie: account.cookie }],
      ['POST', '/contacts', bodyWith({ email: 'deep@example.com' }, 'data', deep), { Authorization: `Bearer ${project.secretKey}` }],
      ['PATCH', `/contacts/${existing.body.id}`, bodyWith({}, 'data', deep), { Authorization: `Bearer ${project.secretKey}` }],
      ['POST', '/contacts/lookup', bodyWith({ emails: ['existing@example.com'] }, 'x', deep), { Authorization: `Bearer ${project.secretKey}` }],
      ['POST', '/v1/track', bodyWith({ email: 'deep@example.com', event: 'deep' }, 'data', deep), { Authorization: `Bearer ${project.publicKey}` }],
      ['POST', '/events/track', bodyWith({ email: 'deep@example.com', event: 'deep' }, 'data', deep), { Authorization: `Bearer ${project.secretKey}` }],
      ['POST', '/contacts/bulk-unsubscribe', bodyWith({ contactIds: [existing.body.id] }, 'x', deep), { Authorization: `Bearer ${project.secretKey}` }],
    ];
    for (const [method, path, rawBody, headers] of attempts) {
      expectTooDeep(await stack.http.request(method, path, { rawBody, headers: { ...json, ...headers } }), `${method} ${path}`);
    }

    expect(await contactsTotal()).toBe(contactsBefore);
    expect(await eventsTotal()).toBe(eventsBefore);
    expect((await stack.http.get('/users/@me/projects', { cookie: account.cookie })).body).toEqual(projectsBefore);
    expect((await stack.http.get(`/contacts/${existing.body.id}`, { key: project.secretKey })).body.subscribed).toBe(true);
    expect((await stack.http.post('/auth/login', { email: 'deep-signup@example.com', password: 'long enough password' })).status).toBe(401);
  });

  it('refuses very deep arrays (100,000 levels) and a megabyte of open brackets with the same 400', async () => {
    const arrays = bodyWith({ email: 'arrays@example.com', event: 'deep' }, 'data', `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    expectTooDeep(
      await stack.http.request('POST', '/v1/track', { rawBody: arrays, headers: { ...json, Authorization: `Bearer ${project.publicKey}` } }),
      'arrays',
    );
    const brackets = '['.repeat(1024 * 1024 - 1);
    expectTooDeep(await stack.http.request('POST', '/auth/login', { rawBody: brackets, headers: json }), 'brackets');
  });

  it(`stores data nested up to the limit (${MAX_JSON_DEPTH} levels counting the body) and refuses one level more`, async () => {
    // body (1) → data (2) → 30 more objects = 32 levels.
    const atLimit = bodyWith({ email: 'at-limit@example.com' }, 'data', nestedObjects(MAX_JSON_DEPTH - 1, '"leaf"'));
    const ok = await stack.http.request('POST', '/contacts', { rawBody: atLimit, headers: { ...json, Authorization: `Bearer ${project.secretKey}` } });
    expect(ok.status).toBe(201);
    let node = ok.body.data;
    for (let i = 0; i < MAX_JSON_DEPTH - 2; i++) node = node.a;
    expect(node).toEqual({ a: 'leaf' });

    const overLimit = bodyWith({ email: 'over-limit@example.com' }, 'data', nestedObjects(MAX_JSON_DEPTH, '"leaf"'));
    const refused = await stack.http.request('POST', '/contacts', { rawBody: overLimit, headers: { ...json, Authorization: `Bearer ${project.secretKey}` } });
    expectTooDeep(refused, 'over limit');
    expect((await stack.http.post('/contacts/lookup', { emails: ['over-limit@example.com'] }, { key: project.secretKey })).body.found).toEqual([]);
  });

  it('is not fooled by brackets inside strings', async () => {
    const res = await stack.http.post(
      '/v1/track',
      { email: 'brackets@example.com', event: 'text', data: { note: '[[[[{{{{'.repeat(50), quote: 'a "[" \\ b' } },
      { key: project.publicKey },
    );
    expect(res.status).toBe(200);
  });
});

describe('text PostgreSQL cannot store', () => {
  it('refuses a NUL in any string or key of a body with 400 naming the field, on every write route', async () => {
    const existing = await stack.http.post('/contacts', { email: 'nul-target@example.com' }, { key: project.secretKey });
    const cases: Array<[string, string, unknown, string, { key?: string; cookie?: string }]> = [
      ['POST', '/v1/track', { email: 'nul@example.com', event: 'signup', data: { plan: 'a\u0000b' } }, 'data.plan', { key: project.publicKey }],
      ['POST', '/v1/track', { email: 'nul@example.com', event: 'sign\u0000up' }, 'event', { key: project.publicKey }],
      ['POST', '/v1/track', { email: 'nu\u0000l@example.com', event: 'signup' }, 'email', { key: project.publicKey }],
      [
        'POST',
        '/v1/track',
        { email: 'nul@example.com', event: 'signup', data: { list: ['ok', { deep: 'x\u0000' }] } },
        'data.list.1.deep',
        { key: project.publicKey },
      ],
      ['POST', '/v1/track', { email: 'nul@example.com', event: 'signup', data: { 'bad\u0000key': 1 } }, 'data.bad\u0000key', { key: project.publicKey }],
      ['POST', '/events/track', { email: 'nul@example.com', event: 'signup', data: { plan: '\u0000' } }, 'data.plan', { key: project.secretKey }],
      ['POST', '/contacts', { email: 'nul@example.com', data: { plan: 'a\u0000b' } }, 'data.plan', { key: project.secretKey }],
      ['PATCH', `/contacts/${existing.body.id}`, { data: { plan: 'a\u0000b' } }, 'data.plan', { key: project.secretKey }],
      ['POST', '/users/@me/projects', { name: 'Nul\u0000project' }, 'name', { cookie: account.cookie }],
      ['POST', '/auth/signup', { email: 'nul-signup@example.com', password: 'long enough\u0000password' }, 'password', {}],
    ];
    const eventsBefore = await eventsTotal();
    const contactsBefore = await contactsTotal();
    for (const [method, path, body, field, auth] of cases) {
      const res = await stack.http.request(method, path, { body, ...auth });
      expect([path, field, res.status]).toEqual([path, field, 400]);
      expect(res.body.error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('NUL'), errors: [{ field, code: 'invalid_string' }] });
    }
    expect(await eventsTotal()).toBe(eventsBefore);
    expect(await contactsTotal()).toBe(contactsBefore);
    expect((await stack.http.get(`/contacts/${existing.body.id}`, { key: project.secretKey })).body.data).toEqual({});
  });

  it('refuses unpaired surrogates (which jsonb cannot store) the same way, and keeps emoji', async () => {
    const refused = await stack.http.request('POST', '/v1/track', {
      rawBody: '{"email":"surrogate@example.com","event":"e","data":{"name":"x\\ud800y"}}',
      headers: { ...json, Authorization: `Bearer ${project.publicKey}` },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.errors).toEqual([expect.objectContaining({ field: 'data.name' })]);
    const fine = await stack.http.post('/contacts', { email: 'emoji@example.com', data: { name: '💌 \ud83d\ude00' } }, { key: project.secretKey });
    expect(fine.status).toBe(201);
    expect(fine.body.data.name).toBe('💌 😀');
  });
});

describe('prototype-poisoning keys', () => {
  it('refuses __proto__ and constructor.prototype anywhere in a body, and keeps a plain "constructor" key', async () => {
    for (const rawBody of [
      '{"email":"proto@example.com","event":"e","data":{"a":[{"__proto__":{"isAdmin":true}}]}}',
      '{"email":"proto@example.com","event":"e","data":{"constructor":{"prototype":{"isAdmin":true}}}}',
    ]) {
      const res = await stack.http.request('POST', '/v1/track', { rawBody, headers: { ...json, Authorization: `Bearer ${project.publicKey}` } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_REQUEST_BODY', message: expect.stringContaining('__proto__') });
    }
    const fine = await stack.http.post('/v1/track', { email: 'proto@example.com', event: 'e', data: { constructor: 'c' } }, { key: project.publicKey });
    expect(fine.status).toBe(200);
  });
});

describe('Content-Encoding', () => {
  const loginBody = () => Buffer.from(JSON.stringify({ email: account.email, password: account.password }));
  const encoders: Record<string, (b: Buffer) => Buffer> = {
    gzip: (b) => zlib.gzipSync(b),
    deflate: (b) => zlib.deflateSync(b),
    br: (b) => zlib.brotliCompressSync(b),
    identity: (b) => b,
  };

  it('decodes gzip, deflate and br bodies (and identity) on login and track', async () => {
    for (const [encoding, encode] of Object.entries(encoders)) {
      const login = await stack.http.request('POST', '/auth/login', { rawBody: encode(loginBody()), headers: { ...json, 'Content-Encoding': encoding } });
      expect([encoding, login.status]).toEqual([encoding, 200]);
      const trackBody = Buffer.from(JSON.stringify({ email: `encoded-${encoding}@example.com`, event: 'encoded', data: { via: encoding } }));
      const track = await stack.http.request('POST', '/v1/track', {
        rawBody: encode(trackBody),
        headers: { ...json, 'Content-Encoding': encoding, Authorization: `Bearer ${project.publicKey}` },
      });
      expect([encoding, track.status]).toEqual([encoding, 200]);
    }
    const stored = await stack.http.post('/contacts/lookup', { emails: ['encoded-br@example.com'] }, { key: project.secretKey });
    expect(stored.body.found).toHaveLength(1);
    // Stacked codings are undone last-applied first.
    const stacked = await stack.http.request('POST', '/auth/login', {
      rawBody: zlib.brotliCompressSync(zlib.gzipSync(loginBody())),
      headers: { ...json, 'Content-Encoding': 'gzip, br' },
    });
    expect(stacked.status).toBe(200);
  });

  it('counts the size limit after decoding: a gzip bomb is refused with 413 while the client still holds most of it', async () => {
    // 100 MB of zeros as 100 gzip members of 1 MB each (a valid gzip stream, about 100 KB), declared
    // in full by Content-Length (far under the limit): only decoding shows it is too large.
    const member = zlib.gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
    const bomb = Buffer.concat(Array(100).fill(member));
    expect(bomb.length).toBeLessThan(200 * 1024);
    // Two members (2 MB decoded) go out; the other 98 stay with the client until the answer comes.
    // An API that inflated the whole body before judging it would wait for them for ever.
    const res = await answerWhileHoldingTheRest(
      '/auth/login',
      { ...json, 'Content-Encoding': 'gzip', 'Content-Length': String(bomb.length) },
      bomb.subarray(0, 2 * member.length),
    );
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('1 MB') });
    // The API keeps answering. (What refusing a 1 GB body costs the API's memory is a figure of
    // `npm run bench:platform`.)
    expect((await stack.http.get('/health')).status).toBe(200);
  });

  it('refuses a body of unannounced length with 413 as soon as 1 MB has arrived, before the client has sent the rest', async () => {
    // Chunked, no Content-Length: nothing to refuse up front. 1 MB and 16 KB go out, the rest is held.
    const res = await answerWhileHoldingTheRest('/auth/login', { ...json, 'Transfer-Encoding': 'chunked' }, Buffer.alloc(1024 * 1024 + 16 * 1024, ' '));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('1 MB') });
    expect((await stack.http.get('/health')).status).toBe(200);
  });

  it('answers 400 in the envelope for bodies that do not decode, never 500', async () => {
    const plain = loginBody();
    const corrupt = zlib.gzipSync(plain);
    corrupt.fill(0x41, 12, corrupt.length - 8);
    const truncated = zlib.gzipSync(plain).subarray(0, 15);
    const cases: Array<[string, Buffer, string]> = [
      ['plain JSON labelled gzip', plain, 'gzip'],
      ['plain JSON labelled deflate', plain, 'deflate'],
      ['plain JSON labelled br', plain, 'br'],
      ['corrupt gzip', corrupt, 'gzip'],
      ['truncated gzip', truncated, 'gzip'],
      ['gzip labelled br', zlib.gzipSync(plain), 'br'],
    ];
    for (const [label, rawBody, encoding] of cases) {
      const res = await stack.http.request('POST', '/auth/login', { rawBody, headers: { ...json, 'Content-Encoding': encoding } });
      expect([label, res.status]).toEqual([label, 400]);
      expect(res.body).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST_BODY', message: expect.stringContaining(encoding) } });
    }
  });

  it('answers 415 for an encoding it does not know, on any route', async () => {
    for (const encoding of ['compress', 'zstd', 'x-made-up']) {
      for (const [path, headers] of [
        ['/auth/login', {}],
        ['/v1/track', { Authorization: `Bearer ${project.publicKey}` }],
      ] as const) {
        const res = await stack.http.request('POST', path, { rawBody: loginBody(), headers: { ...json, ...headers, 'Content-Encoding': encoding } });
        expect([encoding, path, res.status]).toEqual([encoding, path, 415]);
        expect(res.body.error).toMatchObject({ statusCode: 415, message: expect.stringContaining(encoding) });
      }
    }
  });

  it('refuses a body that is not UTF-8 with 400, and another declared charset with 415', async () => {
    const latin1 = Buffer.from('{"email":"caf\xe9@example.com","password":"x"}', 'latin1');
    const res = await stack.http.request('POST', '/auth/login', { rawBody: latin1, headers: json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST_BODY');
    const declared = await stack.http.request('POST', '/auth/login', { rawBody: latin1, headers: { 'Content-Type': 'application/json; charset=iso-8859-1' } });
    expect(declared.status).toBe(415);
    const utf8 = await stack.http.request('POST', '/auth/login', { rawBody: loginBody(), headers: { 'Content-Type': 'application/json; charset=UTF-8' } });
    expect(utf8.status).toBe(200);
  });
});

describe('a client that goes away mid-body', () => {
  it('costs the API nothing: no 500 logged, and it keeps answering', async () => {
    const { port } = new URL(stack.api.url);
    const logsBefore = stack.logs.length;
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write('POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 5000\r\n\r\n');
        socket.write(zlib.gzipSync(Buffer.from('{"email":"a@b.c"')).subarray(0, 12), () => {
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 100);
        });
      });
      socket.on('error', reject);
    });
    // The API has decided its answer to the cut-off request (its one 'request' line is written
    // last, after any error): whatever it was going to log about it is logged.
    const answered = await eventually(() => {
      const line = stack.logs.slice(logsBefore).find((l) => l.msg === 'request' && l.method === 'POST' && l.path === '/auth/login');
      if (!line) throw new Error('the cut-off request is not answered yet');
      return line;
    });
    expect(answered.status).toBe(400);
    expect((await stack.http.get('/health')).status).toBe(200);
    expect(stack.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
  });
});
