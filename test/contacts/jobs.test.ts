import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';
import { eventsOf } from '../support/emailFixtures';

let stack: TestStack;
let project: TestProject;
beforeAll(async () => {
  stack = await startTestStack();
  ({ project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const k = () => ({ key: project.secretKey });
const importCsv = (content: string | Buffer, name = 'contacts.csv', type = 'text/csv') =>
  uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name, content, type });
async function finishedJob(path: string) {
  return eventually(async () => {
    const res = await stack.http.get(path, k());
    if (!['COMPLETED', 'FAILED', 'CANCELLED'].includes(res.body.status)) throw new Error(`still ${res.body.status}`);
    return res.body;
  });
}

describe('CSV import', () => {
  it('imports rows as a Temporal workflow, typing data and reporting row errors', async () => {
    await stack.http.post('/contacts', { email: 'existing@example.com', subscribed: true, data: { plan: 'free', keep: 'me' } }, k());
    const csv = [
      'Email,first name,plan,seats,vip,joined,subscribed',
      'ada@example.com,Ada,pro,3,true,2026-01-02,yes',
      'EXISTING@example.com,,pro,,,,no',
      'not-an-email,Bad,pro,1,false,,',
      'bob@example.com,"Bob, Jr.",free,0012,FALSE,2026-03-04T05:06:07Z,',
      ',Nobody,,,,,',
      'carol@example.com,Carol,pro,1,true,,maybe',
    ].join('\n');
    const res = await importCsv(csv);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ jobId: expect.any(String), status: 'QUEUED', total: 6 });

    const job = await finishedJob(`/contacts/import/${res.body.jobId}`);
    expect(job).toMatchObject({ id: res.body.jobId, type: 'IMPORT', status: 'COMPLETED', progress: 100, total: 6, processed: 6, succeeded: 3, failed: 3 });
    expect(job.errors).toEqual([
      { row: 4, email: 'not-an-email', error: 'Invalid email address' },
      { row: 6, error: 'Missing email' },
      { row: 7, email: 'carol@example.com', error: expect.stringContaining('subscribed must be') },
    ]);
    expect(job.startedAt).toEqual(expect.any(String));
    expect(job.completedAt).toEqual(expect.any(String));

    const lookup = await stack.http.post('/contacts/lookup', { emails: ['ada@example.com', 'existing@example.com', 'bob@example.com'] }, k());
    const byEmail = Object.fromEntries(lookup.body.found.map((c: { email: string; id: string }) => [c.email, c.id]));
    const ada = (await stack.http.get(`/contacts/${byEmail['ada@example.com']}`, k())).body;
    expect(ada).toMatchObject({ subscribed: true, data: { 'first name': 'Ada', plan: 'pro', seats: 3, vip: true, joined: '2026-01-02T00:00:00.000Z' } });
    const bob = (await stack.http.get(`/contacts/${byEmail['bob@example.com']}`, k())).body;
    expect(bob.data).toEqual({ 'first name': 'Bob, Jr.', plan: 'free', seats: '0012', vip: false, joined: '2026-03-04T05:06:07.000Z' });
    const existing = (await stack.http.get(`/contacts/${byEmail['existing@example.com']}`, k())).body;
    expect(existing).toMatchObject({ subscribed: false, data: { plan: 'pro', keep: 'me' } });
    const events = await stack.http.get(`/events/contact/${existing.id}`, k());
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['contact.unsubscribed']);

    // Operators find the run in Temporal by the ProjectId search attribute.
    const description = await stack.temporal.workflow.getHandle(`import-${res.body.jobId}`).describe();
    expect(description.searchAttributes.ProjectId).toEqual([project.id]);
  });

  it('updates on re-import instead of duplicating', async () => {
    const csv = 'email,score\nrepeat@example.com,1\nREPEAT@example.com,2\n';
    for (const _ of [1, 2]) {
      const res = await importCsv(csv);
      await finishedJob(`/contacts/import/${res.body.jobId}`);
    }
    const list = await stack.http.get('/contacts?search=repeat@', k());
    expect(list.body.total).toBe(1);
    expect(list.body.data[0].data).toEqual({ score: 2 });
  });

  it('refuses bad uploads at once with a 4xx and queues nothing', async () => {
    const before = (await stack.orm.em.fork().execute(`select count(*)::int as n from jobs`))[0].n;
    const cases: Array<[string | Buffer, number, RegExp]> = [
      ['name,plan\nAda,pro\n', 400, /no "email" column/],
      ['email,name\n"ada@example.com,Ada\n', 400, /could not be read/i],
      [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0xff, 0xfe]), 400, /not UTF-8|binary/],
      ['', 400, /empty/],
      ['email,email\na@example.com,b@example.com\n', 400, /twice/],
    ];
    for (const [content, status, message] of cases) {
      const res = await importCsv(content);
      expect(res.status).toBe(status);
      expect(res.body.error.message).toMatch(message);
    }
    const huge = Buffer.alloc(6 * 1024 * 1024, 'a');
    expect((await importCsv(huge)).status).toBe(413);
    const noFile = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, {
      field: 'upload',
      name: 'x.csv',
      content: 'email\na@example.com',
    });
    expect(noFile.status).toBe(400);
    const json = await stack.http.post('/contacts/import', { file: 'email\na@b.c' }, k());
    expect(json.status).toBe(400);
    expect((await stack.orm.em.fork().execute(`select count(*)::int as n from jobs`))[0].n).toBe(before);
  });

  it('stops an import cancelled through Temporal (as from the UI) and marks the job CANCELLED', async () => {
    const lines = ['email'];
    for (let i = 0; i < 60_000; i++) lines.push(`cancel${i}@example.com`);
    const res = await importCsv(lines.join('\n'));
    const jobPath = `/contacts/import/${res.body.jobId}`;
    await eventually(
      async () => {
        const job = (await stack.http.get(jobPath, k())).body;
        if (job.processed < 1000) throw new Error(`processed ${job.processed}`);
      },
      30_000,
      20,
    );
    await stack.temporal.workflow.getHandle(`import-${res.body.jobId}`).cancel();
    const job = await finishedJob(jobPath);
    expect(job.status).toBe('CANCELLED');
    expect(job.processed).toBeLessThan(60_000);
    expect(job.completedAt).toEqual(expect.any(String));
    // What was committed stays; nothing more arrives after the cancellation.
    const countNow = (await stack.orm.em.fork().execute(`select count(*)::int as n from contacts where email like 'cancel%'`))[0].n;
    expect(countNow).toBe(job.processed);
  });

  it("answers 404 for another project's job, a bulk job id, or garbage", async () => {
    const res = await importCsv('email\nmine@example.com\n');
    const other = await accountWithProject(stack.http);
    expect((await stack.http.get(`/contacts/import/${res.body.jobId}`, { key: other.project.secretKey })).body.error.code).toBe('JOB_NOT_FOUND');
    expect((await stack.http.get(`/contacts/bulk/${res.body.jobId}`, k())).status).toBe(404);
    expect((await stack.http.get('/contacts/import/xyz', k())).status).toBe(404);
  });
});

describe('bulk jobs', () => {
  async function contactIds(n: number, prefix: string) {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await stack.http.post('/contacts', { email: `${prefix}${i}@example.com` }, k())).body.id);
    return ids;
  }

  it('unsubscribes and resubscribes, recording one event per flip, and reports unknown ids', async () => {
    const ids = await contactIds(3, 'bulk-sub');
    const missing = '00000000-0000-4000-8000-000000000001';
    const res = await stack.http.post('/contacts/bulk-unsubscribe', { contactIds: [...ids, missing] }, k());
    expect(res.status).toBe(202);
    const job = await finishedJob(`/contacts/bulk/${res.body.jobId}`);
    expect(job).toMatchObject({
      type: 'BULK_UNSUBSCRIBE',
      status: 'COMPLETED',
      total: 4,
      processed: 4,
      succeeded: 3,
      failed: 1,
      errors: [{ contactId: missing, error: 'Contact not found' }],
    });
    for (const id of ids) expect((await stack.http.get(`/contacts/${id}`, k())).body.subscribed).toBe(false);

    // Already unsubscribed: no second event, and the contact is not written.
    const before = (await stack.http.get(`/contacts/${ids[0]}`, k())).body;
    await finishedJob(`/contacts/bulk/${(await stack.http.post('/contacts/bulk-unsubscribe', { contactIds: ids }, k())).body.jobId}`);
    expect((await stack.http.get(`/contacts/${ids[0]}`, k())).body.updatedAt).toBe(before.updatedAt);
    const resubscribe = (await stack.http.post('/contacts/bulk-subscribe', { contactIds: ids }, k())).body.jobId;
    await finishedJob(`/contacts/bulk/${resubscribe}`);
    const events = await stack.http.get(`/events/contact/${ids[0]}`, k());
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['contact.subscribed', 'contact.unsubscribed']);
    expect((await eventsOf(stack, { contactId: ids[0] })).map((e) => e.data)).toEqual([
      { source: 'bulk', jobId: res.body.jobId },
      { source: 'bulk', jobId: resubscribe },
    ]);
  });

  it('deletes contacts in bulk', async () => {
    const ids = await contactIds(2, 'bulk-del');
    const res = await stack.http.post('/contacts/bulk-delete', { contactIds: ids }, k());
    const job = await finishedJob(`/contacts/bulk/${res.body.jobId}`);
    expect(job).toMatchObject({ type: 'BULK_DELETE', status: 'COMPLETED', succeeded: 2, failed: 0 });
    expect((await stack.http.get(`/contacts/${ids[0]}`, k())).status).toBe(404);
  });

  it("cannot touch another project's contacts", async () => {
    const [id] = await contactIds(1, 'bulk-guard');
    const other = await accountWithProject(stack.http);
    const res = await stack.http.post('/contacts/bulk-delete', { contactIds: [id] }, { key: other.project.secretKey });
    const job = await eventually(async () => {
      const r = await stack.http.get(`/contacts/bulk/${res.body.jobId}`, { key: other.project.secretKey });
      if (r.body.status !== 'COMPLETED') throw new Error(r.body.status);
      return r.body;
    });
    expect(job).toMatchObject({ succeeded: 0, failed: 1 });
    expect((await stack.http.get(`/contacts/${id}`, k())).status).toBe(200);
  });

  it('refuses 1,001 ids, none, or non-UUIDs with 422', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    for (const contactIds of [many, [], ['nope'], 'x']) {
      expect((await stack.http.post('/contacts/bulk-subscribe', { contactIds }, k())).status).toBe(422);
    }
  });
});
