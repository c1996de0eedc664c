import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { accountWithProject, type TestProject } from '../support/accounts';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import { insertContact } from '../support/emailFixtures';
import { feedbackLinks, sqlOf } from './analyticsFixtures';

/** GET /activity and its companions over real sends and feedback, and SQL-written history. */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
let sql: ReturnType<typeof sqlOf>;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s', RATE_LIMIT_PER_MINUTE: '0' },
  });
  sql = sqlOf(stack);
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const get = (project: TestProject, path: string) => stack.http.get(path, { key: project.secretKey });

/** A workflow DELAY → next step, and an execution of it; returns their ids. */
async function workflowWithExecution(
  projectId: string,
  contactId: string,
  options: { next: 'SEND_EMAIL' | 'WEBHOOK'; status: string; startedAt?: string; completedAt?: string | null; waitUntil?: string | null; name?: string },
) {
  const [workflow] = await sql(`insert into workflows (project_id, name, trigger_event_name) values (?, ?, 'signed-up') returning id`, [
    projectId,
    options.name ?? 'Onboarding',
  ]);
  const [delay] = await sql(
    `insert into workflow_steps (workflow_id, type, name, config) values (?, 'DELAY', 'Wait a day', '{"amount":1,"unit":"days"}') returning id`,
    [workflow.id],
  );
  const [next] = await sql(`insert into workflow_steps (workflow_id, type, name, config) values (?, ?, 'Welcome mail', '{}') returning id`, [
    workflow.id,
    options.next,
  ]);
  await sql(`insert into workflow_transitions (workflow_id, from_step_id, to_step_id) values (?, ?, ?)`, [workflow.id, delay.id, next.id]);
  const [execution] = await sql(
    `insert into workflow_executions (project_id, workflow_id, contact_id, status, current_step_id, wait_until, started_at, completed_at)
     values (?, ?, ?, ?, ?, ?, coalesce(?::timestamptz, now()), ?) returning id`,
    [projectId, workflow.id, contactId, options.status, delay.id, options.waitUntil ?? null, options.startedAt ?? null, options.completedAt ?? null],
  );
  return { workflowId: workflow.id as string, executionId: execution.id as string };
}

/** Every page of a feed query, following cursors. */
async function allPages(project: TestProject, query: string) {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await get(project, `/activity?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    items.push(...res.body.data);
    expect(res.body.hasMore).toBe(res.body.cursor !== null);
    cursor = res.body.cursor;
    pages++;
  } while (cursor && pages < 1000);
  return { items, pages };
}

describe('GET /activity from the records that exist', () => {
  let project: TestProject;
  let domain: string;
  let reader: { contactId: string; email: string };
  let emailId: string;
  let workflow: { workflowId: string; executionId: string };
  let campaignId: string;

  beforeAll(async () => {
    ({ project, domain } = await projectWithVerifiedDomain(stack, dns));
    reader = await insertContact(stack, project.id, { email: 'ada@example.org' });
    const tracked = await stack.http.post('/v1/track', { email: 'ada@example.org', event: 'signed-up', data: { plan: 'pro' } }, { key: project.publicKey });
    expect(tracked.status).toBe(200);
    const sent = await stack.http.post(
      '/v1/send',
      { to: 'ada@example.org', from: { name: 'Acme', email: `hello@${domain}` }, subject: 'Welcome', body: '<p>Hi <a href="https://example.com/x">x</a></p>' },
      {
        key: project.secretKey,
      },
    );
    expect(sent.status).toBe(200);
    emailId = sent.body.data.emails[0].email;
    await eventually(async () => {
      const [row] = await sql(`select sent_at from emails where id = ?`, [emailId]);
      if (!row.sent_at) throw new Error('not sent yet');
    }, 60_000);
    const links = feedbackLinks(stack, { emailId, contactId: reader.contactId });
    await links.open();
    await links.click('https://example.com/x');
    await links.unsubscribe();
    // A send to a suppressed address is recorded SUPPRESSED.
    await sql(`insert into email_suppressions (project_id, email, reason) values (?, 'gone@example.org', 'BOUNCE')`, [project.id]);
    const suppressed = await stack.http.post(
      '/v1/send',
      { to: 'gone@example.org', from: `hello@${domain}`, subject: 'Lost', body: '<p>x</p>' },
      { key: project.secretKey },
    );
    expect(suppressed.status).toBe(200);
    // A scheduled campaign.
    const created = await stack.http.post(
      '/campaigns',
      { name: 'Winter', subject: 'Winter news', body: '<p>w</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    campaignId = created.body.data.id;
    const scheduled = await stack.http.post(
      `/campaigns/${campaignId}/send`,
      { scheduledFor: new Date(Date.now() + 3 * 86400_000).toISOString() },
      { key: project.secretKey },
    );
    expect(scheduled.body.data.status).toBe('SCHEDULED');
    workflow = await workflowWithExecution(project.id, reader.contactId, { next: 'SEND_EMAIL', status: 'COMPLETED', completedAt: new Date().toISOString() });
  }, 120_000);

  it('lists every kind of item, newest first, with its contact and metadata', async () => {
    const res = await get(project, '/activity');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: expect.any(Array), cursor: null, hasMore: false });
    const items = res.body.data;
    const times = items.map((i: any) => Date.parse(i.timestamp));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(new Set(items.map((i: any) => i.type))).toEqual(
      new Set([
        'event.triggered',
        'email.sent',
        'email.opened',
        'email.clicked',
        'contact.unsubscribed',
        'email.suppressed',
        'campaign.scheduled',
        'workflow.started',
        'workflow.completed',
      ]),
    );
    const byType = (type: string) => items.find((i: any) => i.type === type);
    expect(byType('event.triggered')).toEqual({
      id: expect.any(String),
      type: 'event.triggered',
      timestamp: expect.any(String),
      contactId: reader.contactId,
      contactEmail: 'ada@example.org',
      metadata: { eventName: 'signed-up', eventData: { plan: 'pro' } },
    });
    expect(byType('email.sent')).toMatchObject({
      id: emailId,
      contactId: reader.contactId,
      contactEmail: 'ada@example.org',
      metadata: { emailId, subject: 'Welcome', from: `Acme <hello@${domain}>`, source: 'TRANSACTIONAL' },
    });
    expect(byType('email.clicked').metadata).toMatchObject({ emailId, url: 'https://example.com/x' });
    expect(byType('contact.unsubscribed')).toMatchObject({ contactId: reader.contactId, metadata: { source: 'page' } });
    expect(byType('email.suppressed')).toMatchObject({ contactEmail: 'gone@example.org', metadata: { subject: 'Lost', source: 'TRANSACTIONAL' } });
    expect(byType('campaign.scheduled')).toMatchObject({ id: campaignId, metadata: { campaignId, campaignName: 'Winter', scheduledFor: expect.any(String) } });
    expect(byType('campaign.scheduled').contactId).toBeUndefined();
    expect(byType('workflow.completed')).toMatchObject({
      id: workflow.executionId,
      contactId: reader.contactId,
      metadata: { executionId: workflow.executionId, workflowId: workflow.workflowId, workflowName: 'Onboarding', status: 'COMPLETED' },
    });
  });

  it('filters by type and by contact', async () => {
    const opens = await get(project, '/activity?types=email.opened,email.clicked');
    expect(opens.body.data.map((i: any) => i.type).sort()).toEqual(['email.clicked', 'email.opened']);
    const custom = await get(project, '/activity?types=event.triggered');
    expect(custom.body.data.map((i: any) => i.metadata.eventName)).toEqual(['signed-up']);
    const campaigns = await get(project, '/activity?types=campaign.scheduled,campaign.sent');
    expect(campaigns.body.data.map((i: any) => i.type)).toEqual(['campaign.scheduled']);
    const ofReader = await get(project, `/activity?contactId=${reader.contactId}`);
    expect(ofReader.body.data.every((i: any) => i.contactId === reader.contactId)).toBe(true);
    expect(ofReader.body.data.map((i: any) => i.type)).not.toContain('campaign.scheduled');
    expect(ofReader.body.data.length).toBeGreaterThanOrEqual(7);
    const nobody = await get(project, `/activity?contactId=${crypto.randomUUID()}`);
    expect(nobody.body).toEqual({ data: [], cursor: null, hasMore: false });
  });

  it('stats, recent count, types and the upcoming sends', async () => {
    const stats = await get(project, '/activity/stats');
    expect(stats.body).toMatchObject({
      totalEvents: 1,
      totalEmailsSent: 1,
      totalEmailsOpened: 1,
      totalEmailsClicked: 1,
      totalWorkflowsStarted: 1,
      openRate: 100,
      clickRate: 100,
    });
    const recent = await get(project, '/activity/recent-count');
    expect(recent.body.count).toBe((await get(project, '/activity')).body.data.length);

    const types = await get(project, '/activity/types');
    expect(types.body.types).toEqual([
      'event.triggered',
      'email.sent',
      'email.suppressed',
      'email.delivered',
      'email.opened',
      'email.clicked',
      'email.bounced',
      'email.complained',
      'email.received',
      'contact.subscribed',
      'contact.unsubscribed',
      'campaign.scheduled',
      'campaign.sent',
      'workflow.started',
      'workflow.completed',
    ]);

    const soon = new Date(Date.now() + 86400_000).toISOString();
    const waiting = await workflowWithExecution(project.id, reader.contactId, { next: 'SEND_EMAIL', status: 'WAITING', waitUntil: soon, name: 'Nurture' });
    // A wait whose next step does not send, one beyond 30 days, one already due: not listed.
    await workflowWithExecution(project.id, reader.contactId, { next: 'WEBHOOK', status: 'WAITING', waitUntil: soon });
    await workflowWithExecution(project.id, reader.contactId, {
      next: 'SEND_EMAIL',
      status: 'WAITING',
      waitUntil: new Date(Date.now() + 40 * 86400_000).toISOString(),
    });
    await workflowWithExecution(project.id, reader.contactId, {
      next: 'SEND_EMAIL',
      status: 'WAITING',
      waitUntil: new Date(Date.now() - 60_000).toISOString(),
    });
    const upcoming = await get(project, '/activity/upcoming');
    expect(upcoming.body.data).toEqual([
      expect.objectContaining({
        type: 'workflow',
        executionId: waiting.executionId,
        workflowName: 'Nurture',
        stepName: 'Welcome mail',
        contactEmail: 'ada@example.org',
        scheduledFor: soon,
      }),
      expect.objectContaining({ type: 'campaign', campaignId, campaignName: 'Winter' }),
    ]);
    expect((await get(project, '/activity/upcoming?limit=1')).body.data).toHaveLength(1);
  });
});

describe('GET /activity pagination and window', () => {
  let project: TestProject;
  let contacts: Array<{ contactId: string; email: string }>;

  beforeAll(async () => {
    ({ project } = await accountWithProject(stack.http));
    contacts = await Promise.all([0, 1, 2].map((i) => insertContact(stack, project.id, { email: `p${i}@example.org` })));
    // 240 events over the last 20 days, many sharing a timestamp (ties are broken by id).
    await sql(
      `insert into events (project_id, contact_id, name, data, created_at)
       select ?, (array[?, ?, ?]::uuid[])[1 + g % 3], case when g % 4 = 0 then 'purchase' else 'page-view' end, jsonb_build_object('n', g),
              date_trunc('minute', now()) - make_interval(mins => (g / 3) * 120)
       from generate_series(1, 240) g`,
      [project.id, ...contacts.map((c) => c.contactId)],
    );
    // Older than the default 30 days.
    await sql(`insert into events (project_id, contact_id, name, created_at) values (?, ?, 'old-news', now() - interval '45 days')`, [
      project.id,
      contacts[0].contactId,
    ]);
    for (let i = 0; i < 5; i++) {
      await workflowWithExecution(project.id, contacts[i % 3].contactId, {
        next: 'SEND_EMAIL',
        status: 'RUNNING',
        startedAt: new Date(Date.now() - i * 3 * 3600_000).toISOString(),
      });
    }
  });

  it('walks every item exactly once, newest first, whatever the page size', async () => {
    const expected = await sql(
      `select id from (
         select id, created_at as ts, 'event.triggered' as type from events where project_id = ? and created_at >= now() - interval '30 days'
         union all select id, started_at, 'workflow.started' from workflow_executions where project_id = ?
       ) x order by ts desc, type desc, id desc`,
      [project.id, project.id],
    );
    expect(expected).toHaveLength(245);
    for (const limit of [7, 50, 100]) {
      const { items, pages } = await allPages(project, `limit=${limit}`);
      expect(items.map((i: any) => i.id)).toEqual(expected.map((r: any) => r.id));
      expect(pages).toBe(Math.ceil(245 / limit));
    }
    const first = await get(project, '/activity');
    expect(first.body.data).toHaveLength(50);
    expect(first.body.hasMore).toBe(true);
    expect((await get(project, '/activity?limit=1000')).body.data).toHaveLength(100);
  });

  it('pages a filtered feed, and a cursor keeps its window', async () => {
    const { items } = await allPages(project, `types=event.triggered&contactId=${contacts[1].contactId}&limit=9`);
    expect(items).toHaveLength(80);
    expect(items.every((i: any) => i.contactId === contacts[1].contactId && i.type === 'event.triggered')).toBe(true);

    const start = new Date(Date.now() - 60 * 86400_000).toISOString();
    const wide = await allPages(project, `start=${start}&limit=25`);
    expect(wide.items).toHaveLength(246);
    expect(wide.items[245].metadata.eventName).toBe('old-news');

    const end = new Date(Date.now() - 3 * 86400_000).toISOString();
    const older = await allPages(project, `end=${end}&limit=10&types=event.triggered`);
    expect(older.items.length).toBeGreaterThan(0);
    expect(older.items.every((i: any) => Date.parse(i.timestamp) < Date.parse(end))).toBe(true);
    expect(older.items.map((i: any) => i.metadata.eventName)).not.toContain('old-news');
  });

  it('refuses bad parameters with a 400 and needs the secret key', async () => {
    const cases = [
      'types=nope',
      'types=email.opened,nope',
      'types=',
      'types=,',
      'limit=0',
      'limit=abc',
      'limit=-5',
      'cursor=garbage',
      `cursor=${Buffer.from(JSON.stringify({ seq: '12' })).toString('base64url')}`,
      'contactId=not-a-uuid',
      'start=last-week',
      'start=2026-11-31T00:00:00Z',
      'start=2026-02-29',
      `start=2026-01-10&end=2026-01-01`,
      'limit=1&limit=2',
    ];
    for (const query of cases) {
      const res = await get(project, `/activity?${query}`);
      expect({ query, status: res.status, code: res.body.error?.code }).toEqual({ query, status: 400, code: 'BAD_REQUEST' });
    }
    for (const path of ['/activity/stats?start=x', '/activity/stats?start=2024-01-01', '/activity/upcoming?limit=0']) {
      expect((await get(project, path)).status).toBe(400);
    }
    for (const path of ['/activity', '/activity/stats', '/activity/recent-count', '/activity/types', '/activity/upcoming']) {
      expect((await stack.http.get(path, { key: project.publicKey })).status).toBe(401);
    }
  });
});
