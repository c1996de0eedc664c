import { Client } from 'pg';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';

let stack: TestStack;
let project: TestProject;
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  ({ project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const key = () => ({ key: project.secretKey });

describe('POST /contacts (upsert by email)', () => {
  it('creates with 201 and _meta.isNew, subscribed by default, email normalised', async () => {
    const res = await stack.http.post('/contacts', { email: '  Ada@Example.COM ', data: { plan: 'pro' } }, key());
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ email: 'ada@example.com', subscribed: true, data: { plan: 'pro' }, _meta: { isNew: true, isUpdate: false } });
    const again = await stack.http.post('/contacts', { email: 'ada@example.com', data: { seats: 3 } }, key());
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: res.body.id, data: { plan: 'pro', seats: 3 }, _meta: { isNew: false, isUpdate: true } });
  });

  it('answers a missing or malformed email with the plain { error } 400', async () => {
    for (const body of [{}, { email: 'nope' }, { email: 42 }]) {
      const res = await stack.http.post('/contacts', body, key());
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  it('applies the data rules: null deletes, "" is ignored, one-shot values are not stored, reserved keys are dropped', async () => {
    await stack.http.post('/contacts', { email: 'rules@example.com', data: { keep: 'yes', drop: 'soon', blank: 'stays' } }, key());
    const res = await stack.http.post(
      '/contacts',
      {
        email: 'rules@example.com',
        data: {
          drop: null,
          blank: '',
          once: { value: 'temp', persistent: false },
          saved: { value: 7, persistent: true },
          nested: { a: { b: [1, 2] } },
          list: ['x', 'y'],
          id: 'evil',
          email: 'evil@example.com',
          mailroom_id: 'x',
          mailroom_email: 'x',
          unsubscribeUrl: 'x',
          subscribeUrl: 'x',
          manageUrl: 'x',
        },
      },
      key(),
    );
    expect(res.status).toBe(200);
    expect(res.body.email).toBe('rules@example.com');
    expect(res.body.data).toEqual({ keep: 'yes', blank: 'stays', saved: 7, nested: { a: { b: [1, 2] } }, list: ['x', 'y'] });
  });

  it('refuses __proto__ keys with a clear 400 and stores other object-internal names as ordinary data', async () => {
    const headers = { 'Content-Type': 'application/json' };
    const poisoned = '{"email":"proto@example.com","data":{"__proto__":{"isAdmin":true}}}';
    const refused = await stack.http.request('POST', '/contacts', { rawBody: poisoned, key: project.secretKey, headers });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'INVALID_REQUEST_BODY', message: expect.stringContaining('__proto__') });
    const fine = '{"email":"proto@example.com","data":{"constructor":"c","toString":"t","plan":"pro"}}';
    const res = await stack.http.request('POST', '/contacts', { rawBody: fine, key: project.secretKey, headers });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({ constructor: 'c', toString: 't', plan: 'pro' });
  });

  it('refuses data beyond the limits with 422 and writes nothing', async () => {
    const tooManyKeys = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
    const tooBig = { blob: 'x'.repeat(70 * 1024) };
    const longKey = { ['k'.repeat(101)]: 1 };
    for (const data of [tooManyKeys, tooBig, longKey, 'not an object', [1, 2]]) {
      const res = await stack.http.post('/contacts', { email: 'limits@example.com', data }, key());
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    expect((await stack.http.post('/contacts/lookup', { emails: ['limits@example.com'] }, key())).body.notFound).toEqual(['limits@example.com']);
  });

  it('refuses a merge that would take stored data past 100 keys (the database holds the line)', async () => {
    const first = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`a${i}`, i]));
    const second = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`b${i}`, i]));
    expect((await stack.http.post('/contacts', { email: 'merge@example.com', data: first }, key())).status).toBe(201);
    const res = await stack.http.post('/contacts', { email: 'merge@example.com', data: second }, key());
    expect(res.status).toBe(422);
    const lookup = await stack.http.post('/contacts/lookup', { emails: ['merge@example.com'] }, key());
    const contact = await stack.http.get(`/contacts/${lookup.body.found[0].id}`, key());
    expect(Object.keys(contact.body.data)).toHaveLength(60);
  });

  it('creates exactly one contact when twenty upserts race for a new email', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stack.http.post('/contacts', { email: 'race@example.com', data: { [`k${i}`]: i } }, key())),
    );
    expect(results.every((r) => r.status === 200 || r.status === 201)).toBe(true);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    const contact = await stack.http.get(`/contacts/${results[0].body.id}`, key());
    expect(Object.keys(contact.body.data)).toHaveLength(20);
  });
});

describe('a write that changes nothing', () => {
  it('leaves the contact unwritten: updatedAt stays for the same data, a tracked event or an empty upsert; a change moves it', async () => {
    const created = await stack.http.post('/contacts', { email: 'steady@example.com', data: { plan: 'pro', seats: 3 } }, key());
    const id = created.body.id;
    const unchanged = await stack.http.post('/contacts', { email: 'steady@example.com', data: { plan: 'pro' } }, key());
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toMatchObject({ id, data: { plan: 'pro', seats: 3 }, updatedAt: created.body.updatedAt, _meta: { isNew: false } });
    await stack.http.post('/contacts', { email: 'steady@example.com', subscribed: true }, key());
    const tracked = await stack.http.post('/v1/track', { email: 'steady@example.com', event: 'visited' }, { key: project.publicKey });
    expect(tracked.status).toBe(200);
    expect(tracked.body.data).toMatchObject({ contact: id });
    expect((await stack.http.get(`/contacts/${id}`, key())).body.updatedAt).toBe(created.body.updatedAt);
    const events = await stack.http.get(`/events/contact/${id}`, key());
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['visited']);

    const changed = await stack.http.post('/contacts', { email: 'steady@example.com', data: { seats: 4 } }, key());
    expect(changed.body.data).toEqual({ plan: 'pro', seats: 4 });
    expect(Date.parse(changed.body.updatedAt)).toBeGreaterThan(Date.parse(created.body.updatedAt));
  });

  it('finds a contact another writer inserted while the write waited on it, and records the event once', async () => {
    const other = new Client({ connectionString: stack.databaseUrl });
    const watcher = new Client({ connectionString: stack.databaseUrl });
    await other.connect();
    await watcher.connect();
    try {
      await other.query('begin');
      const [inserted] = (
        await other.query(`insert into contacts (project_id, email, subscribed, data) values ($1, 'late@example.com', true, '{}') returning id, updated_at`, [
          project.id,
        ])
      ).rows;
      const tracked = stack.http.post('/v1/track', { email: 'late@example.com', event: 'arrived' }, { key: project.publicKey });
      // The track's statement has taken its snapshot and waits on the uncommitted row (read
      // outside the open transaction, which would see one snapshot of the activity view).
      for (;;) {
        const waiting = await watcher.query(`select 1 from pg_stat_activity where datname = current_database() and wait_event = 'transactionid'`);
        if (waiting.rowCount) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await other.query('commit');
      const res = await tracked;
      expect(res.status).toBe(200);
      expect(res.body.data.contact).toBe(inserted.id);
      const events = await stack.http.get(`/events/contact/${inserted.id}`, key());
      expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['arrived']);
      const contact = (await stack.http.get(`/contacts/${inserted.id}`, key())).body;
      expect(contact.updatedAt).toBe(new Date(inserted.updated_at).toISOString());
    } finally {
      await other.end();
      await watcher.end();
    }
  });

  it('answers every one of twenty identical upserts racing for a new email with the one contact', async () => {
    for (let round = 0; round < 3; round++) {
      const email = `same-race-${round}@example.com`;
      const results = await Promise.all(Array.from({ length: 20 }, () => stack.http.post('/contacts', { email }, key())));
      expect(results.map((r) => r.status).sort()).toEqual([...Array(19).fill(200), 201]);
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
      expect(results.every((r) => r.body.email === email)).toBe(true);
    }
  });
});

describe('subscription flips', () => {
  it('records contact.unsubscribed / contact.subscribed when POST or PATCH flips the state, and nothing otherwise', async () => {
    const created = await stack.http.post('/contacts', { email: 'flip@example.com' }, key());
    const id = created.body.id;
    await stack.http.post('/contacts', { email: 'flip@example.com', subscribed: false }, key());
    await stack.http.patch(`/contacts/${id}`, { subscribed: false }, key()); // no change
    await stack.http.patch(`/contacts/${id}`, { subscribed: true }, key());
    const events = await stack.http.get(`/events/contact/${id}`, key());
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['contact.subscribed', 'contact.unsubscribed']);
    expect(events.body.data[0]).toMatchObject({ contactId: id, source: 'SYSTEM' });
  });
});

describe('GET /contacts', () => {
  let listProject: TestProject;
  beforeAll(async () => {
    ({ project: listProject } = await accountWithProject(stack.http));
    for (let i = 0; i < 25; i++) {
      await stack.http.post(
        '/contacts',
        { email: `member${String(i).padStart(2, '0')}@${i % 2 ? 'odd' : 'even'}.example`, subscribed: i % 5 !== 0 },
        { key: listProject.secretKey },
      );
    }
  });
  const list = (query: string) => stack.http.get(`/contacts${query}`, { key: listProject.secretKey });

  it('pages newest first with a cursor; total only on the first page', async () => {
    const first = await list('?limit=10');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(10);
    expect(first.body).toMatchObject({ hasMore: true, total: 25 });
    expect(first.body.data[0].email).toBe('member24@even.example');
    const seen = [...first.body.data];
    let cursor = first.body.cursor;
    while (cursor) {
      const page = await list(`?limit=10&cursor=${encodeURIComponent(cursor)}`);
      expect(page.body.total).toBe(0);
      seen.push(...page.body.data);
      cursor = page.body.hasMore ? page.body.cursor : null;
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen.map((c) => c.id)).size).toBe(25);
  });

  it('clamps limit to 100 and falls back on unknown sort and dir', async () => {
    expect((await list('?limit=500')).body.data).toHaveLength(25);
    const fallback = await list('?sort=shoeSize&dir=sideways&limit=1');
    expect(fallback.status).toBe(200);
    expect(fallback.body.data[0].email).toBe('member24@even.example');
    expect((await list('?limit=0')).body.data).toHaveLength(1);
  });

  it('searches emails case-insensitively by substring, filters by subscription, sorts by email', async () => {
    const odd = await list('?search=ODD.EX&limit=100');
    expect(odd.body.total).toBe(12);
    expect(odd.body.data.every((c: { email: string }) => c.email.endsWith('@odd.example'))).toBe(true);
    expect((await list('?search=%25&limit=100')).body.total).toBe(0);
    const unsubscribed = await list('?subscribed=false&limit=100');
    expect(unsubscribed.body.total).toBe(5);
    const byEmail = await list('?sort=email&dir=asc&limit=3');
    expect(byEmail.body.data.map((c: { email: string }) => c.email)).toEqual(['member00@even.example', 'member01@odd.example', 'member02@even.example']);
    const next = await list(`?sort=email&dir=asc&limit=3&cursor=${byEmail.body.cursor}`);
    expect(next.body.data[0].email).toBe('member03@odd.example');
  });

  it('counts a broad search exactly up to 10,000 matches and says when the total is capped', async () => {
    const { project: big } = await accountWithProject(stack.http);
    await stack.orm.em
      .fork()
      .execute(`insert into contacts (project_id, email) select ?, 'bulk' || g || '@wide.example' from generate_series(1, 10050) g`, [big.id]);
    const broad = await stack.http.get('/contacts?search=wide.example&limit=5', { key: big.secretKey });
    expect(broad.body).toMatchObject({ total: 10000, totalCapped: true, hasMore: true });
    const everyone = await stack.http.get('/contacts?limit=5', { key: big.secretKey });
    expect(everyone.body).toMatchObject({ total: 10050, totalCapped: false });
    const narrow = await stack.http.get('/contacts?search=bulk1234@', { key: big.secretKey });
    expect(narrow.body).toMatchObject({ total: 1, totalCapped: false });
  });

  it('answers a foreign or broken cursor 400', async () => {
    const first = await list('?limit=2');
    expect((await list(`?sort=email&limit=2&cursor=${first.body.cursor}`)).status).toBe(400);
    expect((await list('?cursor=garbage!!')).status).toBe(400);
  });
});

describe('one contact', () => {
  it('gets, patches and deletes; 404 for missing ids and other projects', async () => {
    const created = (await stack.http.post('/contacts', { email: 'one@example.com', data: { a: 1 } }, key())).body;
    expect((await stack.http.get(`/contacts/${created.id}`, key())).body).toMatchObject({ id: created.id, email: 'one@example.com', data: { a: 1 } });
    const patched = await stack.http.patch(`/contacts/${created.id}`, { email: 'One.Renamed@example.com', data: { a: null, b: 2 } }, key());
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: created.id, email: 'one.renamed@example.com', data: { b: 2 } });

    const other = await accountWithProject(stack.http);
    for (const res of [
      await stack.http.get(`/contacts/${created.id}`, { key: other.project.secretKey }),
      await stack.http.get('/contacts/00000000-0000-4000-8000-000000000000', key()),
      await stack.http.get('/contacts/not-a-uuid', key()),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('CONTACT_NOT_FOUND');
    }

    const deleted = await stack.http.delete(`/contacts/${created.id}`, key());
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await stack.http.get(`/contacts/${created.id}`, key())).status).toBe(404);
  });

  it('answers 409 when PATCH takes an email another contact uses', async () => {
    const a = (await stack.http.post('/contacts', { email: 'taken-a@example.com' }, key())).body;
    await stack.http.post('/contacts', { email: 'taken-b@example.com' }, key());
    const res = await stack.http.patch(`/contacts/${a.id}`, { email: 'TAKEN-B@example.com' }, key());
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect((await stack.http.get(`/contacts/${a.id}`, key())).body.email).toBe('taken-a@example.com');
  });
});

describe('POST /contacts/lookup', () => {
  it('splits emails into found and notFound', async () => {
    await stack.http.post('/contacts', { email: 'found@example.com', subscribed: false }, key());
    const res = await stack.http.post('/contacts/lookup', { emails: ['FOUND@example.com', 'missing@example.com'] }, key());
    expect(res.status).toBe(200);
    expect(res.body.found).toEqual([{ id: expect.any(String), email: 'found@example.com', subscribed: false }]);
    expect(res.body.notFound).toEqual(['missing@example.com']);
  });

  it('refuses 501 emails, none, or invalid ones with 422', async () => {
    const many = Array.from({ length: 501 }, (_, i) => `x${i}@example.com`);
    for (const emails of [many, [], ['not-an-email'], 'a@b.c']) {
      expect((await stack.http.post('/contacts/lookup', { emails }, key())).status).toBe(422);
    }
  });
});

describe('contact fields', () => {
  let fieldsProject: TestProject;
  beforeAll(async () => {
    ({ project: fieldsProject } = await accountWithProject(stack.http));
    const k = { key: fieldsProject.secretKey };
    await stack.http.post(
      '/contacts',
      { email: 'f1@example.com', data: { plan: 'pro', seats: 3, vip: true, signedUpAt: '2026-01-02T03:04:05Z', address: { city: 'Oslo' }, tags: ['a'] } },
      k,
    );
    await stack.http.post('/contacts', { email: 'f2@example.com', data: { plan: 'free', seats: 1 } }, k);
    await stack.http.post('/contacts', { email: 'f3@example.com', data: { plan: 'pro' } }, k);
    await stack.http.post('/contacts', { email: 'f4@example.com' }, k);
  });
  const k = () => ({ key: fieldsProject.secretKey });

  it('lists standard fields first, then custom ones with inferred types and coverage', async () => {
    const res = await stack.http.get('/contacts/fields', k());
    expect(res.status).toBe(200);
    expect(res.body.fields.slice(0, 4).map((f: { field: string }) => f.field)).toEqual(['email', 'subscribed', 'createdAt', 'updatedAt']);
    const byField = Object.fromEntries(res.body.fields.map((f: { field: string }) => [f.field, f]));
    expect(byField['data.plan']).toEqual({ field: 'data.plan', type: 'string', coverage: 75 });
    expect(byField['data.seats']).toMatchObject({ type: 'number', coverage: 50 });
    expect(byField['data.vip']).toMatchObject({ type: 'boolean', coverage: 25 });
    expect(byField['data.signedUpAt']).toMatchObject({ type: 'date' });
    expect(byField['data.address']).toMatchObject({ type: 'object' });
    expect(byField['data.tags']).toMatchObject({ type: 'array' });
    expect(res.body.count).toBe(res.body.fields.length);
  });

  it('lists distinct values, most frequent first, with nested paths', async () => {
    const res = await stack.http.get('/contacts/fields/data.plan/values', k());
    expect(res.body).toEqual({ field: 'data.plan', values: ['pro', 'free'], count: 2, limit: 100 });
    expect((await stack.http.get('/contacts/fields/data.address.city/values', k())).body.values).toEqual(['Oslo']);
    expect((await stack.http.get('/contacts/fields/email/values', k())).status).toBe(400);
  });

  it('reports usage and deletes a field from every contact', async () => {
    const usage = await stack.http.get('/contacts/fields/data.seats/usage', k());
    expect(usage.body).toMatchObject({ segments: [], campaigns: [], workflows: [], contactCount: 2, canDelete: true });
    const res = await stack.http.delete('/contacts/fields/data.seats', k());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ field: 'data.seats', deletedFrom: 2 });
    const fields = await stack.http.get('/contacts/fields', k());
    expect(fields.body.fields.map((f: { field: string }) => f.field)).not.toContain('data.seats');
    expect((await stack.http.delete('/contacts/fields/email', k())).status).toBe(400);
  });
});

/**
 * Keys that need escaping somewhere between the URL, the JSON body and PostgreSQL's text[] literal
 * of a data path. Each has a decoy: the key a careless escaping would name instead (JSON writes a
 * newline as `\n`, which PostgreSQL's array parser reads as the letter `n`).
 */
describe('contact fields with hostile keys', () => {
  const hostile: Array<{ key: string; decoy: string }> = [
    { key: 'a\nb', decoy: 'anb' },
    { key: 'a\tb', decoy: 'atb' },
    { key: 'q"uote', decoy: 'quote' },
    { key: 'back\\slash', decoy: 'backslash' },
    { key: 'brace{,}', decoy: 'brace' },
    { key: ' padded ', decoy: 'padded' },
    { key: 'ünï😀', decoy: 'uni' },
  ];
  let hostileProject: TestProject;
  const k = () => ({ key: hostileProject.secretKey });
  const fieldUrl = (key: string, suffix = '') => `/contacts/fields/${encodeURIComponent(`data.${key}`)}${suffix}`;

  beforeEach(async () => {
    ({ project: hostileProject } = await accountWithProject(stack.http));
    const data = Object.fromEntries(
      hostile.flatMap(({ key, decoy }) => [
        [key, `value of ${key}`],
        [decoy, `decoy ${decoy}`],
      ]),
    );
    expect((await stack.http.post('/contacts', { email: 'h1@example.com', data }, k())).status).toBe(201);
    // h2 holds only the decoys, so a count of the wrong key differs from the right one.
    const decoys = Object.fromEntries(hostile.map(({ decoy }) => [decoy, `decoy ${decoy}`]));
    expect((await stack.http.post('/contacts', { email: 'h2@example.com', data: decoys }, k())).status).toBe(201);
  });

  const contactData = async (email: string) => {
    const res = await stack.http.get(`/contacts?search=${encodeURIComponent(email)}`, k());
    return res.body.data[0].data as Record<string, unknown>;
  };

  it('stores, lists and reads each key exactly as written', async () => {
    const data = await contactData('h1@example.com');
    for (const { key, decoy } of hostile) {
      expect(data[key]).toBe(`value of ${key}`);
      expect(data[decoy]).toBe(`decoy ${decoy}`);
    }
    const listed = (await stack.http.get('/contacts/fields', k())).body.fields.map((f: { field: string }) => f.field);
    for (const { key } of hostile) expect(listed).toContain(`data.${key}`);
    for (const { key } of hostile) {
      const values = await stack.http.get(fieldUrl(key, '/values'), k());
      expect(values.status).toBe(200);
      expect(values.body).toMatchObject({ field: `data.${key}`, values: [`value of ${key}`] });
      const usage = await stack.http.get(fieldUrl(key, '/usage'), k());
      expect(usage.body).toMatchObject({ field: `data.${key}`, contactCount: 1, canDelete: true });
    }
  });

  it('deletes each key from every contact and leaves its decoy alone', async () => {
    for (const { key } of hostile) {
      const res = await stack.http.delete(fieldUrl(key), k());
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ field: `data.${key}`, deletedFrom: 1 });
    }
    const expectedDecoys = Object.fromEntries(hostile.map(({ decoy }) => [decoy, `decoy ${decoy}`]));
    expect(await contactData('h1@example.com')).toEqual(expectedDecoys);
    expect(await contactData('h2@example.com')).toEqual(expectedDecoys);
  });

  it('removes one key with a contact update (null) and keeps the rest', async () => {
    const id = (await stack.http.get('/contacts?search=h1%40example.com', k())).body.data[0].id;
    const res = await stack.http.patch(`/contacts/${id}`, { data: { 'a\nb': null, 'q"uote': null } }, k());
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data)).not.toContain('a\nb');
    expect(Object.keys(res.body.data)).not.toContain('q"uote');
    expect(res.body.data).toMatchObject({ anb: 'decoy anb', quote: 'decoy quote', 'a\tb': 'value of a\tb' });
  });

  it('matches segment conditions on the key itself, and a segment using the key blocks its deletion only', async () => {
    for (const { key } of hostile) {
      const condition = { logic: 'AND', groups: [{ filters: [{ field: `data.${key}`, operator: 'exists' }] }] };
      const segment = await stack.http.post('/segments', { name: `uses ${JSON.stringify(key)}`, condition }, k());
      expect(segment.status).toBe(201);
      expect(segment.body.memberCount).toBe(1);
      const equals = { logic: 'AND', groups: [{ filters: [{ field: `data.${key}`, operator: 'equals', value: `value of ${key}` }] }] };
      const counted = await stack.http.post('/segments', { name: `equals ${JSON.stringify(key)}`, condition: equals }, k());
      expect(counted.body.memberCount).toBe(1);
    }
    for (const { key, decoy } of hostile) {
      const blocked = await stack.http.delete(fieldUrl(key), k());
      expect(blocked.status).toBe(409);
      expect((await stack.http.get(fieldUrl(decoy, '/usage'), k())).body).toMatchObject({ segments: [], contactCount: 2, canDelete: true });
    }
  });

  it('reads a dot in a field name as a path separator (contract 5): a key holding a dot is stored but not addressed', async () => {
    const res = await stack.http.post('/contacts', { email: 'dots@example.com', data: { 'dot.ted': 'flat', dot: { ted: 'nested' } } }, k());
    expect(res.body.data).toMatchObject({ 'dot.ted': 'flat', dot: { ted: 'nested' } });
    expect((await stack.http.get(fieldUrl('dot.ted', '/values'), k())).body.values).toEqual(['nested']);
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.dot.ted', operator: 'equals', value: 'flat' }] }] };
    const segment = await stack.http.post('/segments', { name: 'flat dot', condition }, k());
    expect(segment.body.memberCount).toBe(0);
    expect((await stack.http.delete(`/segments/${segment.body.id}`, k())).status).toBe(204);
    expect((await stack.http.delete(fieldUrl('dot.ted'), k())).body).toEqual({ field: 'data.dot.ted', deletedFrom: 1 });
    expect(await contactData('dots@example.com')).toEqual({ 'dot.ted': 'flat', dot: {} });
  });

  it('finds a workflow CONDITION that reads a path under a unicode key', async () => {
    const workflow = await stack.http.post('/workflows', { name: 'Reads ünï😀', eventName: 'signed_up' }, k());
    expect(workflow.status).toBe(201);
    const step = await stack.http.post(
      `/workflows/${workflow.body.id}/steps`,
      { type: 'CONDITION', config: { field: 'contact.data.ünï😀.tier', operator: 'exists' } },
      k(),
    );
    expect(step.status).toBe(201);
    const usage = await stack.http.get(fieldUrl('ünï😀', '/usage'), k());
    expect(usage.body).toMatchObject({ workflows: [{ id: workflow.body.id, name: 'Reads ünï😀' }], canDelete: false });
    expect((await stack.http.delete(fieldUrl('ünï😀'), k())).status).toBe(409);
    expect((await stack.http.get(fieldUrl('uni', '/usage'), k())).body).toMatchObject({ workflows: [], canDelete: true });
  });
});
