import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';

let stack: TestStack;
let project: TestProject;
const seenByTriggers: RecordedEventsBatch[] = [];
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  ({ project } = await accountWithProject(stack.http));
  stack.eventTriggers.subscribe(async (batch) => void seenByTriggers.push(batch));
});
afterAll(() => stack.stop());

const track = (body: unknown, headers: Record<string, string> = {}) => stack.http.post('/v1/track', body, { key: project.publicKey, headers });
const contactByEmail = async (email: string) => {
  const lookup = await stack.http.post('/contacts/lookup', { emails: [email] }, { key: project.secretKey });
  return lookup.body.found[0] ? (await stack.http.get(`/contacts/${lookup.body.found[0].id}`, { key: project.secretKey })).body : null;
};

describe('POST /v1/track', () => {
  it('records the event, creates the contact subscribed, and answers the wrapped envelope', async () => {
    const res = await track({ email: 'Buyer@Example.com', event: 'purchase', data: { plan: 'pro', amount: 49, coupon: { value: 'X1', persistent: false } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { contact: expect.any(String), event: expect.any(String), timestamp: expect.any(String) } });
    const contact = await contactByEmail('buyer@example.com');
    expect(contact).toMatchObject({ id: res.body.data.contact, subscribed: true, data: { plan: 'pro', amount: 49 } });
    const events = await stack.http.get(`/events/contact/${contact.id}`, { key: project.secretKey });
    expect(events.body.data).toEqual([
      {
        id: res.body.data.event,
        name: 'purchase',
        contactId: contact.id,
        data: { plan: 'pro', amount: 49, coupon: 'X1' },
        source: 'API',
        createdAt: res.body.data.timestamp,
      },
    ]);
  });

  it('accepts the public key only', async () => {
    const res = await stack.http.post('/v1/track', { email: 'a@example.com', event: 'x' }, { key: project.secretKey });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'INVALID_API_KEY', message: 'This endpoint requires a public key (pk_*), not a secret key' });
  });

  it('rejects reserved event names with 422 reserved_event', async () => {
    for (const event of ['email.opened', 'email.anything', 'contact.subscribed', 'contact.unsubscribed', 'segment.vip-customers.entry', 'segment.x.exit']) {
      const res = await track({ email: 'r@example.com', event });
      expect(res.status).toBe(422);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'event', code: 'reserved_event' })]);
    }
    expect((await track({ email: 'r@example.com', event: 'segment.summary' })).status).toBe(200);
  });

  it('validates email, event and data', async () => {
    for (const body of [
      { event: 'x' },
      { email: 'bad', event: 'x' },
      { email: 'a@example.com' },
      { email: 'a@example.com', event: '' },
      { email: 'a@example.com', event: 'x\ny' },
      { email: 'a@example.com', event: 'x', data: [1] },
      { email: 'a@example.com', event: 'x', subscribed: 'yes' },
    ]) {
      const res = await track(body);
      expect(res.status).toBe(422);
    }
  });

  it('follows the subscription rules: explicit values change existing contacts, false never resubscribes, preserve applies to new contacts only', async () => {
    await track({ email: 'subs@example.com', event: 'visit' });
    expect((await contactByEmail('subs@example.com')).subscribed).toBe(true);
    await track({ email: 'subs@example.com', event: 'visit', subscribed: false });
    expect((await contactByEmail('subs@example.com')).subscribed).toBe(false);
    await track({ email: 'subs@example.com', event: 'visit' });
    await track({ email: 'subs@example.com', event: 'visit', subscribed: false });
    expect((await contactByEmail('subs@example.com')).subscribed).toBe(false);
    await track({ email: 'subs@example.com', event: 'visit', subscribed: true, preserveExistingSubscription: true });
    expect((await contactByEmail('subs@example.com')).subscribed).toBe(false);
    await track({ email: 'subs@example.com', event: 'visit', subscribed: true });
    const contact = await contactByEmail('subs@example.com');
    expect(contact.subscribed).toBe(true);

    await track({ email: 'fresh@example.com', event: 'visit', subscribed: false, preserveExistingSubscription: true });
    expect((await contactByEmail('fresh@example.com')).subscribed).toBe(false);

    const names = (await stack.http.get(`/events/contact/${contact.id}?limit=100`, { key: project.secretKey })).body.data.map((e: { name: string }) => e.name);
    expect(names.filter((n: string) => n.startsWith('contact.'))).toEqual(['contact.subscribed', 'contact.unsubscribed']);
  });

  it('hands tracked and emitted events to the event triggers', async () => {
    seenByTriggers.length = 0;
    await track({ email: 'trigger@example.com', event: 'first' });
    await track({ email: 'trigger@example.com', event: 'second', subscribed: false });
    const names = seenByTriggers.flatMap((b) => b.events.map((e) => e.name));
    expect(names).toEqual(['first', 'contact.unsubscribed', 'second']);
    expect(seenByTriggers.every((b) => b.projectId === project.id)).toBe(true);
  });

  it('performs a request once per Idempotency-Key', async () => {
    const headers = { 'Idempotency-Key': 'track-once-1' };
    const first = await track({ email: 'idem@example.com', event: 'signup' }, headers);
    const second = await track({ email: 'idem@example.com', event: 'signup' }, headers);
    expect(first.status).toBe(200);
    expect(second.status).toBe(409);
    expect(second.body.error.details).toMatchObject({ key: 'track-once-1', originalRequest: 'POST /v1/track', originalStatusCode: 200 });
    const contact = await contactByEmail('idem@example.com');
    expect((await stack.http.get(`/events/contact/${contact.id}`, { key: project.secretKey })).body.data).toHaveLength(1);
    // The key is shared with /events/track.
    const alias = await stack.http.post('/events/track', { email: 'idem@example.com', event: 'signup' }, { key: project.secretKey, headers });
    expect(alias.status).toBe(409);
  });

  it('creates one contact and twenty events when twenty tracks race for a new email', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => track({ email: 'swarm@example.com', event: 'ping', data: { n: i } })));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(results.map((r) => r.body.data.contact)).size).toBe(1);
    const events = await stack.http.get(`/events?name=ping&limit=100`, { key: project.secretKey });
    expect(events.body.total).toBe(20);
  });

  it('fails only the track that would break the data limits when tracks arrive together', async () => {
    const sixty = (prefix: string) => Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`${prefix}${i}`, i]));
    await track({ email: 'full@example.com', event: 'setup', data: sixty('a') });
    const results = await Promise.all([
      track({ email: 'full@example.com', event: 'overflow', data: sixty('b') }),
      ...Array.from({ length: 15 }, (_, i) => track({ email: `bystander${i}@example.com`, event: 'fine', data: { i } })),
    ]);
    expect(results[0].status).toBe(422);
    expect(results[0].body.error.errors[0]).toMatchObject({ field: 'data', code: 'too_big' });
    expect(results.slice(1).map((r) => r.status)).toEqual(Array(15).fill(200));
    expect(Object.keys((await contactByEmail('full@example.com')).data)).toHaveLength(60);
    expect((await stack.http.get('/events?name=overflow', { key: project.secretKey })).body.total).toBe(0);
  });

  it('answers CORS preflights for browsers', async () => {
    const res = await stack.http.request('OPTIONS', '/v1/track', { headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toContain('Idempotency-Key');
  });
});

describe('POST /events/track', () => {
  it('is the secret-key alias of /v1/track', async () => {
    const res = await stack.http.post('/events/track', { email: 'alias@example.com', event: 'backend-event' }, { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect((await stack.http.post('/events/track', { email: 'alias@example.com', event: 'x' }, { key: project.publicKey })).status).toBe(401);
  });
});

describe('events endpoints', () => {
  let eventsProject: TestProject;
  beforeAll(async () => {
    ({ project: eventsProject } = await accountWithProject(stack.http));
    for (let i = 0; i < 7; i++)
      await stack.http.post('/v1/track', { email: `e${i % 3}@example.com`, event: i % 2 ? 'open' : 'click' }, { key: eventsProject.publicKey });
  });
  const k = () => ({ key: eventsProject.secretKey });

  it('lists events newest first with a cursor and filters by name and contact', async () => {
    const first = await stack.http.get('/events?limit=4', k());
    expect(first.body).toMatchObject({ hasMore: true, total: 7 });
    const second = await stack.http.get(`/events?limit=4&cursor=${first.body.cursor}`, k());
    expect(second.body).toMatchObject({ hasMore: false, total: 0 });
    expect(new Set([...first.body.data, ...second.body.data].map((e: { id: string }) => e.id)).size).toBe(7);
    expect((await stack.http.get('/events?name=open', k())).body.total).toBe(3);
    const contactId = first.body.data[0].contactId;
    const mine = await stack.http.get(`/events?contactId=${contactId}`, k());
    expect(mine.body.data.every((e: { contactId: string }) => e.contactId === contactId)).toBe(true);
  });

  it('reports stats and names', async () => {
    const stats = await stack.http.get('/events/stats', k());
    expect(stats.body).toEqual({
      total: 7,
      last24h: 7,
      last7d: 7,
      byName: [
        { name: 'click', count: 4 },
        { name: 'open', count: 3 },
      ],
    });
    expect((await stack.http.get('/events/names', k())).body).toEqual({ names: ['click', 'open'] });
  });

  it('reports usage and deletes events by name', async () => {
    expect((await stack.http.get('/events/open/usage', k())).body).toMatchObject({ workflows: [], segments: [], campaigns: [] });
    const res = await stack.http.delete('/events/open', k());
    expect(res.status).toBe(200);
    expect(res.body.deleted).toBe(3);
    expect((await stack.http.get('/events/names', k())).body.names).toEqual(['click']);
  });

  it('answers 404 for the events of a missing contact', async () => {
    expect((await stack.http.get('/events/contact/00000000-0000-4000-8000-000000000000', k())).status).toBe(404);
    expect((await stack.http.get('/events/contact/nope', k())).body.error.code).toBe('CONTACT_NOT_FOUND');
  });
});
