import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { segmentRecomputeScheduleId } from '../../worker/schedules';
import { segmentRepository } from '../../db/segments/segmentRepository';
import type { TrackedRecomputeProgress } from '../../activities/segmentActivities';
import { triggerScheduleRun } from '../support/temporalRuns';

/** The Segments endpoints (specification "Segments (S)", contract section 10). */
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack?.stop());

const tree = (...filters: unknown[]) => ({ logic: 'AND', groups: [{ filters }] });
const f = (field: string, operator: string, value?: unknown, unit?: string) => ({
  field,
  operator,
  ...(value !== undefined ? { value } : {}),
  ...(unit ? { unit } : {}),
});

async function sql(text: string, params: unknown[] = []) {
  return stack.orm.em.fork().execute(text, params);
}

function client(project: TestProject) {
  const key = { key: project.secretKey };
  return {
    post: (path: string, body?: unknown) => stack.http.post(path, body, key),
    get: (path: string) => stack.http.get(path, key),
    patch: (path: string, body?: unknown) => stack.http.patch(path, body, key),
    del: (path: string, body?: unknown) => stack.http.request('DELETE', path, { ...key, body }),
    track: (email: string, event: string, data?: Record<string, unknown>) => stack.http.post('/v1/track', { email, event, data }, { key: project.publicKey }),
    async events(name: string) {
      const res = await stack.http.get(`/events?name=${encodeURIComponent(name)}&limit=100`, key);
      return res.body.data as Array<{ name: string; contactId: string; data: any; source: string }>;
    },
    async memberEmails(segmentId: string) {
      const rows = await sql(`select c.email from segment_members sm join contacts c on c.id = sm.contact_id where sm.segment_id = ? order by c.email`, [
        segmentId,
      ]);
      return rows.map((r: any) => r.email);
    },
  };
}

async function newProject() {
  const { project } = await accountWithProject(stack.http);
  return { project, api: client(project) };
}

describe('POST /segments', () => {
  it('creates a dynamic segment with its count, slug and fields', async () => {
    const { project, api } = await newProject();
    await api.post('/contacts', { email: 'a@example.com', data: { plan: 'pro' } });
    await api.post('/contacts', { email: 'b@example.com', data: { plan: 'free' } });
    const res = await api.post('/segments', { name: 'Pro users!', description: 'paying', condition: tree(f('data.plan', 'equals', 'pro')) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Pro users!',
      description: 'paying',
      type: 'DYNAMIC',
      condition: tree(f('data.plan', 'equals', 'pro')),
      trackMembership: false,
      memberCount: 1,
      slug: 'pro-users',
      projectId: project.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    // Slugs are unique per project.
    const again = await api.post('/segments', { name: 'Pro Users', condition: tree(f('data.plan', 'equals', 'pro')) });
    expect(again.body.slug).toBe('pro-users-2');
  });

  it('creates a static segment, ignoring a condition', async () => {
    const { api } = await newProject();
    const res = await api.post('/segments', { name: 'Hand picked', type: 'STATIC', condition: tree(f('email', 'exists')) });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ type: 'STATIC', condition: null, memberCount: 0 });
  });

  it('answers the plain 400 for a missing name or a dynamic segment without an object condition', async () => {
    const { api } = await newProject();
    for (const body of [
      { condition: tree(f('email', 'exists')) },
      { name: 'x' },
      { name: 'x', condition: 'email = 1' },
      { name: 'x', type: 'DYNAMIC', condition: [tree(f('email', 'exists'))] },
    ]) {
      const res = await api.post('/segments', body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  it('answers 422 for the other invalid fields', async () => {
    const { api } = await newProject();
    const long = await api.post('/segments', { name: 'x'.repeat(101), condition: tree(f('email', 'exists')) });
    expect(long.status).toBe(422);
    expect(long.body.error.errors[0].field).toBe('name');
    const desc = await api.post('/segments', { name: 'x', description: 'd'.repeat(501), type: 'STATIC' });
    expect(desc.body.error.errors[0].field).toBe('description');
    const type = await api.post('/segments', { name: 'x', type: 'SMART', condition: tree(f('email', 'exists')) });
    expect(type.body.error.errors[0]).toMatchObject({ field: 'type', code: 'invalid_enum_value' });
    const track = await api.post('/segments', { name: 'x', trackMembership: 'yes', condition: tree(f('email', 'exists')) });
    expect(track.body.error.errors[0]).toMatchObject({ field: 'trackMembership', code: 'invalid_type' });
  });

  it('needs the secret key', async () => {
    const { project } = await newProject();
    const res = await stack.http.get('/segments', { key: project.publicKey });
    expect(res.status).toBe(401);
    expect((await stack.http.get('/segments')).status).toBe(401);
  });
});

describe('GET /segments, GET /segments/:id', () => {
  it('lists a bare array, newest first, and gets one with its cached memberCount', async () => {
    const { api } = await newProject();
    const first = await api.post('/segments', { name: 'First', type: 'STATIC' });
    const second = await api.post('/segments', { name: 'Second', condition: tree(f('email', 'exists')) });
    const list = await api.get('/segments');
    expect(list.status).toBe(200);
    expect(list.body.map((s: any) => s.id)).toEqual([second.body.id, first.body.id]);

    await api.post('/contacts', { email: 'late@example.com' });
    // Cached: the new contact is counted only after a refresh.
    expect((await api.get(`/segments/${second.body.id}`)).body.memberCount).toBe(0);
    const refreshed = await api.post(`/segments/${second.body.id}/refresh`);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.memberCount).toBe(1);
    expect((await api.get(`/segments/${second.body.id}`)).body.memberCount).toBe(1);
  });

  it("answers 404 SEGMENT_NOT_FOUND for unknown ids and other projects' segments", async () => {
    const { api } = await newProject();
    const other = await newProject();
    const theirs = await other.api.post('/segments', { name: 'Theirs', type: 'STATIC' });
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000', theirs.body.id]) {
      for (const res of [
        await api.get(`/segments/${id}`),
        await api.patch(`/segments/${id}`, { name: 'x' }),
        await api.del(`/segments/${id}`),
        await api.get(`/segments/${id}/contacts`),
        await api.post(`/segments/${id}/refresh`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ code: 'SEGMENT_NOT_FOUND', details: { resource: 'segment', id } });
      }
    }
  });
});

describe('PATCH /segments/:id', () => {
  it('renames without changing the slug, and changes the condition of a dynamic segment', async () => {
    const { api } = await newProject();
    await api.post('/contacts', { email: 'a@example.com', data: { plan: 'pro' } });
    const created = await api.post('/segments', { name: 'VIP', condition: tree(f('data.plan', 'equals', 'free')) });
    expect(created.body.memberCount).toBe(0);
    const res = await api.patch(`/segments/${created.body.id}`, { name: 'Very important', description: 'd', condition: tree(f('data.plan', 'equals', 'pro')) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Very important', description: 'd', slug: 'vip', memberCount: 1, condition: tree(f('data.plan', 'equals', 'pro')) });
    const cleared = await api.patch(`/segments/${created.body.id}`, { description: null });
    expect(cleared.body).toMatchObject({ name: 'Very important', description: null });
  });

  it('refuses a condition on a static segment and invalid conditions with 422', async () => {
    const { api } = await newProject();
    const s = await api.post('/segments', { name: 'S', type: 'STATIC' });
    const res = await api.patch(`/segments/${s.body.id}`, { condition: tree(f('email', 'exists')) });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0].field).toBe('condition');
    const d = await api.post('/segments', { name: 'D', condition: tree(f('email', 'exists')) });
    const bad = await api.patch(`/segments/${d.body.id}`, { condition: tree(f('email', 'within', 3)) });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors.map((e: any) => e.field)).toEqual(['condition.groups.0.filters.0.operator']);
  });

  it('turning tracking on writes the members without events; a condition change moves them with events', async () => {
    const { api } = await newProject();
    await api.post('/contacts', { email: 'a@example.com', data: { plan: 'pro' } });
    await api.post('/contacts', { email: 'b@example.com', data: { plan: 'free' } });
    const s = await api.post('/segments', { name: 'Plan watch', condition: tree(f('data.plan', 'equals', 'pro')) });
    const on = await api.patch(`/segments/${s.body.id}`, { trackMembership: true });
    expect(on.body).toMatchObject({ trackMembership: true, memberCount: 1 });
    expect(await api.memberEmails(s.body.id)).toEqual(['a@example.com']);
    expect(await api.events('segment.plan-watch.entry')).toEqual([]);

    const moved = await api.patch(`/segments/${s.body.id}`, { condition: tree(f('data.plan', 'equals', 'free')) });
    expect(moved.body.memberCount).toBe(1);
    expect(await api.memberEmails(s.body.id)).toEqual(['b@example.com']);
    expect((await api.events('segment.plan-watch.entry')).length).toBe(1);
    expect((await api.events('segment.plan-watch.exit')).length).toBe(1);

    const off = await api.patch(`/segments/${s.body.id}`, { trackMembership: false });
    expect(off.body.trackMembership).toBe(false);
    expect(await api.memberEmails(s.body.id)).toEqual([]);
  });
});

describe('static members', () => {
  it('adds by email (creating missing contacts when asked) and removes', async () => {
    const { api } = await newProject();
    await api.post('/contacts', { email: 'known@example.com' });
    const s = await api.post('/segments', { name: 'List', type: 'STATIC' });
    const added = await api.post(`/segments/${s.body.id}/members`, { emails: ['Known@Example.com', 'missing@example.com'] });
    expect(added.status).toBe(200);
    expect(added.body).toEqual({ added: 1, created: 0, notFound: ['missing@example.com'] });

    const created = await api.post(`/segments/${s.body.id}/members`, {
      emails: ['known@example.com', 'new@example.com'],
      createMissing: true,
      subscribed: false,
    });
    expect(created.body).toEqual({ added: 1, created: 1, notFound: [] });
    const lookup = await api.post('/contacts/lookup', { emails: ['new@example.com'] });
    expect(lookup.body.found[0]).toMatchObject({ email: 'new@example.com', subscribed: false });
    expect((await api.get(`/segments/${s.body.id}`)).body.memberCount).toBe(2);

    const members = await api.get(`/segments/${s.body.id}/contacts`);
    expect(members.body).toMatchObject({ total: 2, page: 1, pageSize: 20, totalPages: 1 });
    expect(members.body.data.map((c: any) => c.email).sort()).toEqual(['known@example.com', 'new@example.com']);

    const removed = await api.del(`/segments/${s.body.id}/members`, { emails: ['known@example.com', 'nobody@example.com'] });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: 1 });
    expect((await api.get(`/segments/${s.body.id}`)).body.memberCount).toBe(1);
  });

  it('records entry and exit events on a tracked static segment', async () => {
    const { api } = await newProject();
    const s = await api.post('/segments', { name: 'Beta testers', type: 'STATIC', trackMembership: true });
    await api.post(`/segments/${s.body.id}/members`, { emails: ['t@example.com'], createMissing: true });
    const entries = await api.events('segment.beta-testers.entry');
    expect(entries).toEqual([expect.objectContaining({ source: 'SYSTEM', data: { segmentId: s.body.id, segmentName: 'Beta testers' } })]);
    await api.del(`/segments/${s.body.id}/members`, { emails: ['t@example.com'] });
    expect(await api.events('segment.beta-testers.exit')).toHaveLength(1);
  });

  it('refuses more than 500 emails (422), bad emails (422) and dynamic segments (400)', async () => {
    const { api } = await newProject();
    const s = await api.post('/segments', { name: 'List', type: 'STATIC' });
    const tooMany = await api.post(`/segments/${s.body.id}/members`, { emails: Array.from({ length: 501 }, (_, i) => `u${i}@example.com`) });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.errors[0]).toMatchObject({ field: 'emails', code: 'too_big' });
    const bad = await api.post(`/segments/${s.body.id}/members`, { emails: ['not-an-email'] });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('emails.0');
    const d = await api.post('/segments', { name: 'D', condition: tree(f('email', 'exists')) });
    expect((await api.post(`/segments/${d.body.id}/members`, { emails: ['a@example.com'] })).status).toBe(400);
    expect((await api.del(`/segments/${d.body.id}/members`, { emails: ['a@example.com'] })).status).toBe(400);
  });
});

describe('GET /segments/:id/contacts', () => {
  it('pages the live members of a dynamic segment, at most 100 a page', async () => {
    const { api } = await newProject();
    const s = await api.post('/segments', { name: 'Everyone at example', condition: tree(f('email', 'contains', '@example.com')) });
    await api.post('/segments/' + s.body.id + '/refresh');
    for (let i = 0; i < 5; i++) await api.post('/contacts', { email: `p${i}@example.com` });
    await api.post('/contacts', { email: 'other@elsewhere.org' });
    const page1 = await api.get(`/segments/${s.body.id}/contacts?page=1&pageSize=2`);
    expect(page1.body).toMatchObject({ total: 5, page: 1, pageSize: 2, totalPages: 3 });
    expect(page1.body.data.map((c: any) => c.email)).toEqual(['p4@example.com', 'p3@example.com']);
    const page3 = await api.get(`/segments/${s.body.id}/contacts?page=3&pageSize=2`);
    expect(page3.body.data.map((c: any) => c.email)).toEqual(['p0@example.com']);
    const clamped = await api.get(`/segments/${s.body.id}/contacts?pageSize=1000`);
    expect(clamped.body.pageSize).toBe(100);
    const junk = await api.get(`/segments/${s.body.id}/contacts?page=abc&pageSize=-3`);
    expect(junk.body).toMatchObject({ page: 1, pageSize: 1 });
  });
});

describe('compute and refresh', () => {
  it('compute diffs a tracked segment, writes its members and emits entry/exit events; refresh only counts', async () => {
    const { api, project } = await newProject();
    // Written behind the API's back throughout, so that live updates (tested below) stay out of it.
    await sql(`insert into contacts (project_id, email, data) values (?, 'a@example.com', '{"score": 5}')`, [project.id]);
    const s = await api.post('/segments', { name: 'High score', trackMembership: true, condition: tree(f('data.score', 'greaterThan', 3)) });
    expect(s.body.memberCount).toBe(1);
    // Changes made behind the API's back (as an import would) are only seen by compute / refresh.
    await sql(`update contacts set data = '{"score": 1}' where email = 'a@example.com'`);
    await sql(`insert into contacts (project_id, email, data) values (?, 'b@example.com', '{"score": 9}'), (?, 'c@example.com', '{"score": 10}')`, [
      s.body.projectId,
      s.body.projectId,
    ]);

    const refreshed = await api.post(`/segments/${s.body.id}/refresh`);
    expect(refreshed.body.memberCount).toBe(2);
    expect(await api.memberEmails(s.body.id)).toEqual(['a@example.com']);
    expect(await api.events('segment.high-score.entry')).toEqual([]);

    const computed = await api.post(`/segments/${s.body.id}/compute`);
    expect(computed.status).toBe(200);
    expect(computed.body).toEqual({ added: 2, removed: 1, total: 2 });
    expect(await api.memberEmails(s.body.id)).toEqual(['b@example.com', 'c@example.com']);
    const entries = await api.events('segment.high-score.entry');
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({ source: 'SYSTEM', data: { segmentId: s.body.id, segmentName: 'High score' } });
    expect(await api.events('segment.high-score.exit')).toHaveLength(1);
    expect((await api.get(`/segments/${s.body.id}`)).body.memberCount).toBe(2);

    // Nothing changed: nothing to emit.
    expect((await api.post(`/segments/${s.body.id}/compute`)).body).toEqual({ added: 0, removed: 0, total: 2 });
    expect(await api.events('segment.high-score.entry')).toHaveLength(2);
  });

  it('pages through the differences (keyset), however many there are', async () => {
    const { api, project } = await newProject();
    const s = await api.post('/segments', { name: 'Tagged', trackMembership: true, condition: tree(f('data.tag', 'equals', 'x')) });
    await sql(
      `insert into contacts (project_id, email, data, created_at) select ?, 'p' || n || '@example.com', '{"tag": "x"}', now() - n * interval '1 second' from generate_series(1, 7) n`,
      [project.id],
    );
    await sql(`insert into contacts (project_id, email, data) values (?, 'other@example.com', '{"tag": "y"}')`, [project.id]);
    const segment = (await segmentRepository.findById(stack.orm.em.fork(), project.id, s.body.id))!;
    const pages: number[] = [];
    const result = await segmentRepository.recompute(stack.orm.em.fork(), segment, {
      emitEvents: true,
      pageSize: 2,
      onPage: async (events) => void pages.push(events.length),
    });
    expect(result).toMatchObject({ added: 7, removed: 0, total: 7 });
    expect(pages).toEqual([2, 2, 2, 1]);
    expect(await api.events('segment.tagged.entry')).toHaveLength(7);
  });

  it('compute answers 400 for untracked and static segments', async () => {
    const { api } = await newProject();
    const d = await api.post('/segments', { name: 'D', condition: tree(f('email', 'exists')) });
    const s = await api.post('/segments', { name: 'S', type: 'STATIC' });
    expect((await api.post(`/segments/${d.body.id}/compute`)).status).toBe(400);
    expect((await api.post(`/segments/${s.body.id}/compute`)).status).toBe(400);
  });

  it('the entry events reach the triggers (automations)', async () => {
    const { api, project } = await newProject();
    const seen: string[] = [];
    const off = stack.eventTriggers.subscribe(async (batch) => {
      if (batch.projectId === project.id) seen.push(...batch.events.map((e) => e.name));
    });
    try {
      const s = await api.post('/segments', { name: 'Everyone', trackMembership: true, condition: tree(f('email', 'exists')) });
      await sql(`insert into contacts (project_id, email) values (?, 'quiet@example.com')`, [project.id]);
      await api.post(`/segments/${s.body.id}/compute`);
      expect(seen).toContain('segment.everyone.entry');
    } finally {
      off();
    }
  });
});

describe('tracked segments stay current without compute', () => {
  it('follows tracked events and subscription changes within seconds', async () => {
    const { api } = await newProject();
    const s = await api.post('/segments', {
      name: 'Recent buyers',
      trackMembership: true,
      condition: tree(f('event.purchase', 'triggeredWithin', 7, 'days'), f('subscribed', 'equals', true)),
    });
    await api.track('buyer@example.com', 'purchase');
    await eventually(async () => expect(await api.memberEmails(s.body.id)).toEqual(['buyer@example.com']));
    await eventually(async () => expect(await api.events('segment.recent-buyers.entry')).toHaveLength(1));
    expect((await api.get(`/segments/${s.body.id}`)).body.memberCount).toBe(1);

    const contact = (await api.post('/contacts/lookup', { emails: ['buyer@example.com'] })).body.found[0];
    await api.patch(`/contacts/${contact.id}`, { subscribed: false });
    await eventually(async () => expect(await api.memberEmails(s.body.id)).toEqual([]));
    await eventually(async () => expect(await api.events('segment.recent-buyers.exit')).toHaveLength(1));
    expect((await api.get(`/segments/${s.body.id}`)).body.memberCount).toBe(0);
  });

  it('follows contact data changes (PATCH /contacts, POST /contacts) and segments that refer to tracked ones', async () => {
    const { api } = await newProject();
    const pro = await api.post('/segments', { name: 'Pro', trackMembership: true, condition: tree(f('data.plan', 'equals', 'pro')) });
    const proInParis = await api.post('/segments', {
      name: 'Pro in Paris',
      trackMembership: true,
      condition: tree(f(`segment.${pro.body.id}`, 'memberOfSegment'), f('data.city', 'equals', 'Paris')),
    });
    const created = await api.post('/contacts', { email: 'p@example.com', data: { plan: 'pro', city: 'Paris' } });
    await eventually(async () => expect(await api.memberEmails(pro.body.id)).toEqual(['p@example.com']));
    await eventually(async () => expect(await api.memberEmails(proInParis.body.id)).toEqual(['p@example.com']));

    await api.patch(`/contacts/${created.body.id}`, { data: { plan: 'free' } });
    await eventually(async () => expect(await api.memberEmails(pro.body.id)).toEqual([]));
    await eventually(async () => expect(await api.memberEmails(proInParis.body.id)).toEqual([]));
    await eventually(async () => expect(await api.events('segment.pro-in-paris.exit')).toHaveLength(1));
  });

  it('the schedule recomputes what time changes', async () => {
    const { api, project } = await newProject();
    const s = await api.post('/segments', { name: 'Active', trackMembership: true, condition: tree(f('event.login', 'triggeredWithin', 1, 'days')) });
    await api.track('old@example.com', 'login');
    await eventually(async () => expect(await api.memberEmails(s.body.id)).toEqual(['old@example.com']));
    await eventually(async () => expect(await api.events('segment.active.entry')).toHaveLength(1));
    // Let the live updates be done with old@ (its entry event has it evaluated once more), so that
    // only the schedule can notice what the clock changes next. The updates run one flush at a
    // time, each over every contact gathered before it began: a contact that logs in now joins
    // in the flush that evaluates old@ once more or in a later one, so once its entry is
    // recorded, old@'s last live evaluation is over.
    await api.track('marker@example.com', 'login');
    await eventually(async () => expect(await api.events('segment.active.entry')).toHaveLength(2));
    await sql(
      `update events set created_at = now() - interval '2 days'
       where project_id = ? and name = 'login' and contact_id = (select id from contacts where project_id = ? and email = 'old@example.com')`,
      [project.id, project.id],
    );
    expect(await api.memberEmails(s.body.id)).toEqual(['marker@example.com', 'old@example.com']);

    const scheduleId = segmentRecomputeScheduleId(stack.config.temporalTaskQueue);
    const described = await stack.temporal.schedule.getHandle(scheduleId).describe();
    expect(described.spec.intervals).toEqual([expect.objectContaining({ every: 5 * 60 * 1000 })]);
    // The run the trigger started has closed, says it removed a member, and the exit was recorded
    // after the schedule took the action: the removal is the schedule's, not a late live update's.
    const run = await triggerScheduleRun<TrackedRecomputeProgress>(stack.temporal, scheduleId);
    expect(run.result.removed).toBeGreaterThanOrEqual(1);
    expect(await api.memberEmails(s.body.id)).toEqual(['marker@example.com']);
    const [exit, ...more] = await sql(`select created_at from events where project_id = ? and name = 'segment.active.exit'`, [project.id]);
    expect(more).toEqual([]);
    expect(new Date(exit.created_at).getTime()).toBeGreaterThanOrEqual(run.takenAt.getTime());
    expect((await api.get(`/segments/${s.body.id}`)).body.memberCount).toBe(1);
  });
});

describe('DELETE /segments/:id', () => {
  async function insertCampaign(projectId: string, status: string, audience: { segmentId?: string; condition?: unknown }) {
    const [row] = await sql(
      `insert into campaigns (project_id, name, subject, body, from_address, status, audience_type, segment_id, audience_condition)
       values (?, 'Camp', 's', 'b', 'a@example.com', ?, ?, ?, ?::jsonb) returning id`,
      [
        projectId,
        status,
        audience.segmentId ? 'SEGMENT' : 'FILTERED',
        audience.segmentId ?? null,
        audience.condition ? JSON.stringify(audience.condition) : null,
      ],
    );
    return row.id as string;
  }

  it('answers 409 while an unfinished campaign uses it, by segmentId or in a FILTERED audience', async () => {
    const { api, project } = await newProject();
    const s = await api.post('/segments', { name: 'Audience', type: 'STATIC' });
    const campaign = await insertCampaign(project.id, 'DRAFT', { segmentId: s.body.id });
    const refused = await api.del(`/segments/${s.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'CONFLICT', details: { segmentId: s.body.id, campaigns: [{ id: campaign, name: 'Camp' }] } });
    await sql(`update campaigns set status = 'SENT' where id = ?`, [campaign]);

    const filtered = await insertCampaign(project.id, 'SCHEDULED', {
      condition: { logic: 'OR', groups: [{ conditions: tree(f(`segment.${s.body.id}`, 'notMemberOfSegment')) }] },
    });
    expect((await api.del(`/segments/${s.body.id}`)).status).toBe(409);
    await sql(`update campaigns set status = 'CANCELLED' where id = ?`, [filtered]);

    expect((await api.del(`/segments/${s.body.id}`)).status).toBe(204);
    expect((await api.get(`/segments/${s.body.id}`)).status).toBe(404);
  });

  it('answers 409 while another segment refers to it', async () => {
    const { api } = await newProject();
    const base = await api.post('/segments', { name: 'Base', type: 'STATIC' });
    const user = await api.post('/segments', { name: 'User', condition: tree(f(`segment.${base.body.id}`, 'memberOfSegment')) });
    const refused = await api.del(`/segments/${base.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.segments).toEqual([{ id: user.body.id, name: 'User' }]);
    expect((await api.del(`/segments/${user.body.id}`)).status).toBe(204);
    expect((await api.del(`/segments/${base.body.id}`)).status).toBe(204);
  });
});

describe('usage lists', () => {
  it('lists the segments and campaigns using a contact field, and refuses to delete it', async () => {
    const { api, project } = await newProject();
    await api.post('/contacts', { email: 'a@example.com', data: { address: { city: 'Paris' }, plan: 'pro' } });
    const seg = await api.post('/segments', { name: 'Parisians', condition: tree(f('data.address.city', 'equals', 'Paris')) });
    const [campaign] = await sql(
      `insert into campaigns (project_id, name, subject, body, from_address, audience_type, audience_condition)
       values (?, 'Pro mail', 's', 'b', 'a@example.com', 'FILTERED', ?::jsonb) returning id`,
      [project.id, JSON.stringify(tree(f('data.plan', 'exists')))],
    );
    const address = await api.get('/contacts/fields/data.address/usage');
    expect(address.body).toMatchObject({ segments: [{ id: seg.body.id, name: 'Parisians' }], campaigns: [], canDelete: false });
    const city = await api.get('/contacts/fields/data.address.city/usage');
    expect(city.body.segments).toEqual([{ id: seg.body.id, name: 'Parisians' }]);
    const plan = await api.get('/contacts/fields/plan/usage');
    expect(plan.body).toMatchObject({ segments: [], campaigns: [{ id: campaign.id, name: 'Pro mail' }], canDelete: false });
    expect((await api.del('/contacts/fields/data.address')).status).toBe(409);
    expect((await api.del('/contacts/fields/data.plan')).status).toBe(409);
    // A field whose name only starts the same is not in use.
    expect((await api.get('/contacts/fields/data.add/usage')).body).toMatchObject({ segments: [], campaigns: [], canDelete: true });
  });

  it('lists the segments and campaigns using an event', async () => {
    const { api, project } = await newProject();
    const seg = await api.post('/segments', {
      name: 'Buyers',
      condition: { logic: 'OR', groups: [{ filters: [f('email', 'exists')] }, { conditions: tree(f('event.purchase', 'triggered')) }] },
    });
    const [campaign] = await sql(
      `insert into campaigns (project_id, name, subject, body, from_address, audience_type, audience_condition)
       values (?, 'Winback', 's', 'b', 'a@example.com', 'FILTERED', ?::jsonb) returning id`,
      [project.id, JSON.stringify(tree(f('event.purchase', 'notTriggeredWithin', 30, 'days')))],
    );
    const usage = await api.get('/events/purchase/usage');
    expect(usage.status).toBe(200);
    expect(usage.body).toEqual({
      event: 'purchase',
      workflows: [],
      segments: [{ id: seg.body.id, name: 'Buyers' }],
      campaigns: [{ id: campaign.id, name: 'Winback' }],
    });
    expect((await api.get('/events/purchases/usage')).body).toMatchObject({ segments: [], campaigns: [] });
  });
});
