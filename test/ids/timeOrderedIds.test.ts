import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';

/** The time in an RFC 9562 v7 id: its first 48 bits, milliseconds since the epoch. */
const millisecondsOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('time-ordered ids (issue 39, append-only keys)', () => {
  it('newTimeOrderedId makes v7 ids that sort in the order they were made, with the time of making', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => newTimeOrderedId());
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(v7);
    // Many fall in one millisecond: the counter still keeps them in order, and none repeats.
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(millisecondsOf(ids[0])).toBeGreaterThanOrEqual(before);
    expect(millisecondsOf(ids[ids.length - 1])).toBeLessThanOrEqual(after);
  });

  describe('ids the database gives', () => {
    let stack: TestStack;
    let project: TestProject;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false });
      ({ project } = await accountWithProject(stack.http));
    });
    afterAll(() => stack.stop());

    it('an event recorded without an id (the column default) gets a v7 id, later ones larger', async () => {
      const ids: string[] = [];
      for (const event of ['first', 'second', 'third']) {
        const res = await stack.http.post('/v1/track', { email: 'ordered@example.com', event }, { key: project.publicKey });
        expect(res.status).toBe(200);
        ids.push(res.body.data.event);
      }
      for (const id of ids) expect(id).toMatch(v7);
      expect([...ids].sort()).toEqual(ids);
      const rows: Array<{ id: string }> = await stack.orm.em.fork().execute(`select id from events where project_id = ?`, [project.id]);
      expect(rows.length).toBeGreaterThanOrEqual(ids.length);
      for (const row of rows) expect(row.id).toMatch(v7);
    });
  });
});
