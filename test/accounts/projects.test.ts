import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, createProject, signUp } from '../support/accounts';
import { projectDataTables, projectTablesKeptOnReset } from '../../db/repositories/projectDataRepository';
import { eventually } from '../support/eventually';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.stop());

describe('projects', () => {
  it('creates a project with a key pair, showing the secret key only then', async () => {
    const account = await signUp(stack.http);
    const res = await stack.http.post('/users/@me/projects', { name: 'Newsletter' }, { cookie: account.cookie });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: expect.any(String), name: 'Newsletter', role: 'OWNER', createdAt: expect.any(String) });
    expect(res.body.publicKey).toMatch(/^pk_[A-Za-z0-9_-]{32,}$/);
    expect(res.body.secretKey).toMatch(/^sk_[A-Za-z0-9_-]{32,}$/);

    const list = await stack.http.get('/users/@me/projects', { cookie: account.cookie });
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({ id: res.body.id, publicKey: res.body.publicKey, role: 'OWNER' });
    expect(JSON.stringify(list.body)).not.toContain(res.body.secretKey);
    // Only a hash of the secret key is stored.
    const [row] = await stack.orm.em.fork().execute(`select * from projects where id = ?`, [res.body.id]);
    expect(JSON.stringify(row)).not.toContain(res.body.secretKey);
  });

  it('takes a change by session cookie only with a JSON body or a custom header, which a cross-site form cannot send', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const base = `${stack.http.baseUrl}/users/@me/projects/${project.id}`;
    // What a form on another site can send with the cookie: no body, or a form-encoded one.
    const regenerate = await fetch(`${base}/regenerate-keys`, { method: 'POST', headers: { Cookie: account.cookie } });
    expect(regenerate.status).toBe(403);
    expect(((await regenerate.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringContaining('X-Requested-With'),
    });
    const rename = await fetch(base, {
      method: 'PATCH',
      headers: { Cookie: account.cookie, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'name=Hijacked',
    });
    expect(rename.status).toBe(403);
    // Nothing changed: the old key still works, the name is the old one.
    expect((await stack.http.get('/contacts?limit=1', { key: project.secretKey })).status).toBe(200);
    const projects = await stack.http.get('/users/@me/projects', { cookie: account.cookie });
    expect(projects.body.find((p: { id: string }) => p.id === project.id).name).toBe(project.name);
    // Reading needs neither; a script's call (the header, or JSON) is taken.
    expect((await fetch(`${base}/security`, { headers: { Cookie: account.cookie } })).status).toBe(200);
    const byScript = await fetch(`${base}/regenerate-keys`, { method: 'POST', headers: { Cookie: account.cookie, 'X-Requested-With': 'XMLHttpRequest' } });
    expect(byScript.status).toBe(200);
    const byJson = await fetch(base, { method: 'PATCH', headers: { Cookie: account.cookie, 'Content-Type': 'application/json' }, body: '{"name":"Renamed"}' });
    expect(byJson.status).toBe(200);
  });

  it('renames a project, and refuses names that are empty, too long or multi-line', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const ok = await stack.http.patch(`/users/@me/projects/${project.id}`, { name: 'Renamed' }, { cookie: account.cookie });
    expect(ok.status).toBe(200);
    expect(ok.body.name).toBe('Renamed');
    for (const name of ['', 'x'.repeat(101), 'two\nlines']) {
      expect((await stack.http.patch(`/users/@me/projects/${project.id}`, { name }, { cookie: account.cookie })).status).toBe(422);
    }
  });

  it("sets and lifts the project's cap on campaign mail per second", async () => {
    const { account, project } = await accountWithProject(stack.http);
    const capped = await stack.http.patch(`/users/@me/projects/${project.id}`, { campaignRatePerSecond: 50 }, { cookie: account.cookie });
    expect(capped.status).toBe(200);
    expect(capped.body).toMatchObject({ name: project.name, campaignRatePerSecond: 50 });
    for (const campaignRatePerSecond of [0, 1.5, 'fast', 100001]) {
      expect((await stack.http.patch(`/users/@me/projects/${project.id}`, { campaignRatePerSecond }, { cookie: account.cookie })).status).toBe(422);
    }
    expect((await stack.http.patch(`/users/@me/projects/${project.id}`, {}, { cookie: account.cookie })).status).toBe(422);
    const lifted = await stack.http.patch(`/users/@me/projects/${project.id}`, { campaignRatePerSecond: null }, { cookie: account.cookie });
    expect(lifted.body.campaignRatePerSecond).toBeNull();
  });

  it("answers 404 for another user's project, exactly as for a missing one", async () => {
    const { project } = await accountWithProject(stack.http);
    const stranger = await signUp(stack.http);
    const theirs = await stack.http.patch(`/users/@me/projects/${project.id}`, { name: 'Mine now' }, { cookie: stranger.cookie });
    const missing = await stack.http.patch(`/users/@me/projects/00000000-0000-4000-8000-000000000000`, { name: 'x' }, { cookie: stranger.cookie });
    const garbage = await stack.http.patch(`/users/@me/projects/not-a-uuid`, { name: 'x' }, { cookie: stranger.cookie });
    for (const res of [theirs, missing, garbage]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('RESOURCE_NOT_FOUND');
    }
  });

  it('regenerates both keys; the old ones stop working at once', async () => {
    const { account, project } = await accountWithProject(stack.http);
    expect((await stack.http.get('/outbox', { key: project.secretKey })).status).toBe(200);
    const res = await stack.http.post(`/users/@me/projects/${project.id}/regenerate-keys`, {}, { cookie: account.cookie });
    expect(res.status).toBe(200);
    expect(res.body.publicKey).toMatch(/^pk_/);
    expect(res.body.secretKey).toMatch(/^sk_/);
    expect(res.body.publicKey).not.toBe(project.publicKey);
    const old = await stack.http.get('/outbox', { key: project.secretKey });
    expect(old.status).toBe(401);
    expect(old.body.error.code).toBe('INVALID_API_KEY');
    expect((await stack.http.get('/outbox', { key: res.body.secretKey })).status).toBe(200);
  });

  it('deletes a project (OWNER only), after which its keys are dead', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const res = await stack.http.delete(`/users/@me/projects/${project.id}`, { cookie: account.cookie });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await stack.http.get('/outbox', { key: project.secretKey })).status).toBe(401);
    expect((await stack.http.get('/users/@me/projects', { cookie: account.cookie })).body).toEqual([]);
  });

  it('reports setup state and security for members', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const setup = await stack.http.get(`/projects/${project.id}/setup-state`, { cookie: account.cookie });
    expect(setup.status).toBe(200);
    expect(setup.body).toMatchObject({ projectId: project.id, steps: { projectCreated: true, emailVerified: false, teamInvited: false } });
    for (const path of [`/projects/${project.id}/security`, `/users/@me/projects/${project.id}/security`]) {
      const res = await stack.http.get(path, { cookie: account.cookie });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        projectId: project.id,
        keys: { publicKey: project.publicKey, secretKeyHint: `sk_…${project.secretKey.slice(-4)}` },
        members: { total: 1, owners: 1 },
        rateLimit: { perMinute: 1000 },
      });
      expect(JSON.stringify(res.body)).not.toContain(project.secretKey);
    }
  });

  it('resets a project: its data goes, the project, keys and members stay', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const em = stack.orm.em.fork();
    await em.execute(`insert into idempotency_keys (project_id, key, request, expires_at) values (?, 'k1', 'POST /v1/track', now() + interval '1 hour')`, [
      project.id,
    ]);
    await stack.mail.send({
      projectId: project.id,
      from: 'a@example.com',
      to: ['b@example.com'],
      subject: 'hello',
      text: 'hi',
      messageId: '<reset-test@mailroom.test>',
    });
    const member = await signUp(stack.http);
    await stack.http.post(`/projects/${project.id}/members`, { email: member.email }, { cookie: account.cookie });

    const notOwner = await stack.http.post(`/users/@me/projects/${project.id}/reset`, {}, { cookie: member.cookie });
    expect(notOwner.status).toBe(403);
    const res = await stack.http.post(`/users/@me/projects/${project.id}/reset`, {}, { cookie: account.cookie });
    expect(res.status).toBe(200);
    expect(res.body.deleted).toMatchObject({ idempotency_keys: 1, outbox_messages: 1 });
    expect((await stack.http.get('/outbox', { key: project.secretKey })).body.data).toEqual([]);
    expect((await stack.http.get(`/projects/${project.id}/members`, { cookie: account.cookie })).body).toHaveLength(2);
  });

  it('covers every table that holds project data in the reset', async () => {
    const rows = await stack.orm.em
      .fork()
      .execute<Array<{ table_name: string }>>(`select table_name from information_schema.columns where column_name = 'project_id' and table_schema = 'public'`);
    const withProjectId = rows.map((r) => r.table_name).filter((t) => t !== 'projects');
    for (const table of withProjectId) {
      expect([...projectDataTables, ...projectTablesKeptOnReset]).toContain(table);
    }
  });
});

describe('members', () => {
  it('lets OWNER and ADMIN manage members with the roles of the contract', async () => {
    const { account: owner, project } = await accountWithProject(stack.http);
    const admin = await signUp(stack.http);
    const member = await signUp(stack.http);
    const add = (who: { email: string }, role: string, as = owner) =>
      stack.http.post(`/projects/${project.id}/members`, { email: who.email, role }, { cookie: as.cookie });

    const addedAdmin = await add(admin, 'ADMIN');
    expect(addedAdmin.status).toBe(201);
    expect(addedAdmin.body).toMatchObject({ userId: admin.userId, role: 'ADMIN' });
    // ISO 8601 as JSON writes a Date, not PostgreSQL's text form ("2026-11-27 16:22:47.123+00").
    expect(addedAdmin.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await add(member, 'MEMBER', admin)).status).toBe(201);
    expect((await add(member, 'MEMBER')).status).toBe(409);
    expect((await add({ email: 'nobody@example.com' }, 'MEMBER')).status).toBe(404);
    expect((await add({ email: 'x@example.com' }, 'EMPEROR')).status).toBe(422);

    const list = await stack.http.get(`/projects/${project.id}/members`, { cookie: member.cookie });
    expect(list.status).toBe(200);
    expect(list.body.map((m: { role: string }) => m.role).sort()).toEqual(['ADMIN', 'MEMBER', 'OWNER']);
    for (const m of list.body) expect(m.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // A MEMBER manages nothing; an ADMIN cannot touch the OWNER or grant OWNER.
    expect((await stack.http.patch(`/projects/${project.id}/members/${admin.userId}`, { role: 'MEMBER' }, { cookie: member.cookie })).status).toBe(403);
    expect((await stack.http.post(`/users/@me/projects/${project.id}/regenerate-keys`, {}, { cookie: member.cookie })).status).toBe(403);
    expect((await stack.http.patch(`/projects/${project.id}/members/${member.userId}`, { role: 'OWNER' }, { cookie: admin.cookie })).status).toBe(403);
    expect((await stack.http.delete(`/projects/${project.id}/members/${owner.userId}`, { cookie: admin.cookie })).status).toBe(403);
    expect((await stack.http.delete(`/users/@me/projects/${project.id}`, { cookie: admin.cookie })).status).toBe(403);

    // The last OWNER cannot leave or be demoted.
    const demote = await stack.http.patch(`/projects/${project.id}/members/${owner.userId}`, { role: 'ADMIN' }, { cookie: owner.cookie });
    expect(demote.status).toBe(409);
    expect((await stack.http.delete(`/projects/${project.id}/members/${owner.userId}`, { cookie: owner.cookie })).status).toBe(409);

    // A member may leave; an admin may remove a member.
    const promoted = await stack.http.patch(`/projects/${project.id}/members/${member.userId}`, { role: 'ADMIN' }, { cookie: owner.cookie });
    expect(promoted.body.role).toBe('ADMIN');
    expect((await stack.http.delete(`/projects/${project.id}/members/${member.userId}`, { cookie: member.cookie })).status).toBe(204);
    expect((await stack.http.get(`/projects/${project.id}/members`, { cookie: member.cookie })).status).toBe(404);
  });

  it('hides projects from non-members', async () => {
    const { project } = await accountWithProject(stack.http);
    const stranger = await signUp(stack.http);
    for (const path of ['members', 'setup-state', 'security']) {
      expect((await stack.http.get(`/projects/${project.id}/${path}`, { cookie: stranger.cookie })).status).toBe(404);
    }
  });
});

describe('API keys', () => {
  it('answers 401 UNAUTHORIZED without credentials and INVALID_API_KEY for unknown or wrong-kind keys', async () => {
    const { project } = await accountWithProject(stack.http);
    const none = await stack.http.get('/outbox');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');

    const unknown = await stack.http.get('/outbox', { key: 'sk_' + 'x'.repeat(40) });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('INVALID_API_KEY');

    const wrongKind = await stack.http.get('/outbox', { key: project.publicKey });
    expect(wrongKind.status).toBe(401);
    expect(wrongKind.body.error).toMatchObject({
      code: 'INVALID_API_KEY',
      message: 'This endpoint requires a secret key (sk_*), not a public key',
    });

    const malformed = await stack.http.get('/outbox', { headers: { Authorization: 'Basic abc' } });
    expect(malformed.status).toBe(401);
  });

  it('accepts a dashboard session with X-Project-Id naming one of the user’s projects', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const other = await accountWithProject(stack.http);
    const ok = await stack.http.get('/outbox', { cookie: account.cookie, headers: { 'X-Project-Id': project.id } });
    expect(ok.status).toBe(200);
    const notMine = await stack.http.get('/outbox', { cookie: account.cookie, headers: { 'X-Project-Id': other.project.id } });
    expect(notMine.status).toBe(401);
  });
});

describe('account mail without SMTP', () => {
  it('is captured in the outbox, belongs to no project, and is not listed at /outbox', async () => {
    const { account, project } = await accountWithProject(stack.http);
    const captured = await eventually(async () => {
      const rows = await stack.orm.em
        .fork()
        .execute(`select project_id, to_addresses, subject from outbox_messages where ? = any(to_addresses)`, [account.email]);
      if (!rows.length) throw new Error('not captured yet');
      return rows[0];
    });
    expect(captured).toMatchObject({ project_id: null, subject: 'Verify your Mailroom email address' });
    expect((await stack.http.get('/outbox', { key: project.secretKey })).body.data).toEqual([]);
  });
});

describe('GET /config', () => {
  it('reports integrations without authentication', async () => {
    const res = await stack.http.get('/config');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      signups: { enabled: true },
      smtp: { enabled: false },
      localOutbox: { enabled: true },
      oauth: { enabled: false, providers: [] },
      billing: false,
      objectStorage: false,
    });
  });
});

it('creates a second project for the same user independently', async () => {
  const account = await signUp(stack.http);
  const a = await createProject(stack.http, account, 'A');
  const b = await createProject(stack.http, account, 'B');
  expect(a.secretKey).not.toBe(b.secretKey);
  expect((await stack.http.get('/users/@me/projects', { cookie: account.cookie })).body).toHaveLength(2);
});
