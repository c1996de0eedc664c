import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { ContactWriteBatcher } from '../../services/contacts/contactWriteBatcher';
import { splitDataChanges } from '../../services/contacts/contactDataRules';
import type { ContactUpsert } from '../../db/contacts/contactRepository';

let stack: TestStack;
let project: TestProject;
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  ({ project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const track = (body: unknown) => stack.http.post('/v1/track', body, { key: project.publicKey });

describe('one bad track among many', () => {
  it('fails only the track whose data holds a NUL: 40 valid tracks sent beside it all answer 200, three rounds', async () => {
    for (let round = 0; round < 3; round++) {
      const bad = track({ email: `bad-${round}@example.com`, event: 'purchase', data: { note: 'a\u0000b' } });
      const valid = Array.from({ length: 40 }, (_, i) => track({ email: `buyer-${round}-${i}@example.com`, event: 'purchase', data: { round, i } }));
      const [badRes, ...validRes] = await Promise.all([bad, ...valid]);
      expect(validRes.map((r) => r.status)).toEqual(Array(40).fill(200));
      expect(badRes.status).toBe(400);
      expect(badRes.body.error.errors).toEqual([expect.objectContaining({ field: 'data.note' })]);
    }
    const events = await stack.http.get('/events?name=purchase', { key: project.secretKey });
    expect(events.body.total).toBe(120);
  });
});

describe('the contact write batcher', () => {
  const row = (email: string, data: Record<string, unknown>): ContactUpsert => ({
    email,
    subscribedIfNew: true,
    data: splitDataChanges(data),
    event: { name: 'batched', data },
  });

  it('retries a refused batch row by row whatever the refusal, so only the bad row fails', async () => {
    // One statement at a time: after the first write, the other 41 queue and go out together.
    const batcher = new ContactWriteBatcher(stack.orm, { maxBatch: 250, maxInFlight: 1 });
    const first = batcher.write(project.id, row('first@example.com', { n: 0 }), 'track');
    // An unpaired surrogate that skipped validation (HTTP refuses it first): PostgreSQL's jsonb
    // refuses it with 22P02, which is not the data-limit error the batcher used to retry on.
    const writes = Array.from({ length: 41 }, (_, i) =>
      batcher.write(project.id, i === 20 ? row('broken@example.com', { name: 'x\ud800' }) : row(`batched-${i}@example.com`, { n: i }), 'track'),
    );
    const results = await Promise.allSettled([first, ...writes]);
    const failed = results.map((r, i) => [i, r.status] as const).filter(([, status]) => status === 'rejected');
    expect(failed).toEqual([[21, 'rejected']]);
    expect((results[21] as PromiseRejectedResult).reason).toMatchObject({ code: '22P02' });
    const stored = await stack.http.get('/events?name=batched&limit=100', { key: project.secretKey });
    expect(stored.body.total).toBe(41);
    const lookup = await stack.http.post(
      '/contacts/lookup',
      { emails: ['broken@example.com', 'batched-19@example.com', 'batched-21@example.com'] },
      { key: project.secretKey },
    );
    expect(lookup.body.notFound).toEqual(['broken@example.com']);
  });
});
