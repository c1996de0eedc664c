import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';

let stack: TestStack;
let project: TestProject;
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  ({ project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const secret = () => ({ key: project.secretKey });

/** Every event of a contact, newest first, page by page through the cursor. */
async function contactFeed(contactId: string, pageSize: number) {
  const events: Array<{ id: string; name: string; createdAt: string }> = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: any } = await stack.http.get(
      `/events?contactId=${contactId}&limit=${pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      secret(),
    );
    expect(res.status).toBe(200);
    events.push(...res.body.data);
    cursor = res.body.cursor;
  } while (cursor);
  return events;
}

describe('event order', () => {
  it('lists the newest subscription event as the one that decided the contact state, under concurrent toggles', async () => {
    const created = await stack.http.post('/contacts', { email: 'toggler@example.com' }, secret());
    const id = created.body.id;
    for (let round = 0; round < 6; round++) {
      // Concurrent flips through the contact endpoint and through track, in both directions.
      const writes = Array.from({ length: 16 }, (_, i) => {
        const subscribed = (i + round) % 2 === 0;
        return i % 4 === 3
          ? stack.http.post('/v1/track', { email: 'toggler@example.com', event: 'toggle', subscribed }, { key: project.publicKey })
          : stack.http.patch(`/contacts/${id}`, { subscribed }, secret());
      });
      expect((await Promise.all(writes)).map((r) => r.status)).toEqual(Array(16).fill(200));

      const contact = await stack.http.get(`/contacts/${id}`, secret());
      const newest = await stack.http.get(
        `/events?contactId=${id}&name=${contact.body.subscribed ? 'contact.subscribed' : 'contact.unsubscribed'}&limit=1`,
        secret(),
      );
      const feed = (await stack.http.get(`/events?contactId=${id}&limit=100`, secret())).body.data.filter((e: { name: string }) =>
        e.name.startsWith('contact.'),
      );
      expect([round, feed[0].name]).toEqual([round, contact.body.subscribed ? 'contact.subscribed' : 'contact.unsubscribed']);
      expect(feed[0].id).toBe(newest.body.data[0].id);
    }

    // Each subscription event is a change, so in the order of their effect they alternate; and
    // each was stamped after the previous one took effect.
    const feed = await contactFeed(id, 7);
    const flips = feed.filter((e) => e.name.startsWith('contact.'));
    expect(flips.length).toBeGreaterThan(6);
    for (let i = 1; i < flips.length; i++) {
      expect([i, flips[i].name === flips[i - 1].name]).toEqual([i, false]);
      expect(Date.parse(flips[i].createdAt)).toBeLessThanOrEqual(Date.parse(flips[i - 1].createdAt));
    }
  });

  it('pages through the same order as one long page, with no event twice or missing', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => stack.http.post('/v1/track', { email: 'pager@example.com', event: `step-${i % 3}` }, { key: project.publicKey })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(200));
    const contactId = results[0].body.data.contact;
    const all: Array<{ id: string; name: string }> = (await stack.http.get(`/events?contactId=${contactId}&limit=100`, secret())).body.data;
    const onePage = all.map((e) => e.id);
    const paged = (await contactFeed(contactId, 4)).map((e) => e.id);
    expect(paged).toEqual(onePage);
    expect(new Set(paged).size).toBe(30);
    const byName = await stack.http.get(`/events/contact/${contactId}?name=step-1&limit=3`, secret());
    expect(byName.body).toMatchObject({ hasMore: true, total: 10 });
    const rest = await stack.http.get(`/events/contact/${contactId}?name=step-1&limit=100&cursor=${encodeURIComponent(byName.body.cursor)}`, secret());
    expect([...byName.body.data, ...rest.body.data].map((e: { id: string }) => e.id)).toEqual(all.filter((e) => e.name === 'step-1').map((e) => e.id));
  });
});
