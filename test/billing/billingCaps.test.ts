import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { signUp, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { projectDeliveriesClosed } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { recordCountedEmails } from '../../services/billing/countedEmails';
import { BillingLimitExceeded } from '../../services/billing/usageCaps';
import type { NewEmail } from '../../db/emails/emailRepository';

/** Monthly caps (contract 17) with billing off: the caps apply, the Stripe endpoints do not exist. */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer({ rejectRecipients: ['refused@example.org'] });
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s' } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);
const unlimited = { transactional: null, campaigns: null, workflows: null, inbound: null };
const limitsPath = (project: TestProject) => `/users/@me/projects/${project.id}/billing-limits`;
const setLimits = (account: TestAccount, project: TestProject, limits: Record<string, unknown>) =>
  stack.http.put(limitsPath(project), { ...unlimited, ...limits }, { cookie: account.cookie });
const getLimits = async (account: TestAccount, project: TestProject) => (await stack.http.get(limitsPath(project), { cookie: account.cookie })).body;
const tag = () => crypto.randomBytes(4).toString('hex');

function send(project: TestProject, domain: string, to: string | string[], extra: Record<string, unknown> = {}) {
  return stack.http.post('/v1/send', { to, from: `hello@${domain}`, subject: 'Hi', body: '<p>Hello</p>', ...extra }, { key: project.secretKey });
}

async function emailCount(project: TestProject, source = 'TRANSACTIONAL') {
  const [row] = await sql(`select count(*)::int as n from emails where project_id = ? and source = ?`, [project.id, source]);
  return row.n as number;
}

const receivedBy = (address: string) => smtp.messages.filter((m) => m.envelopeTo.includes(address)).length;

describe('GET/PUT billing-limits', () => {
  it('reports every category, unlimited and unused at first', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const none = { limit: null, usage: 0, percentage: 0, isWarning: false, isBlocked: false };
    expect(await getLimits(account, project)).toEqual({ transactional: none, campaigns: none, workflows: none, inbound: none });
  });

  it('takes positive whole numbers or null for all four categories, OWNER/ADMIN only', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const put = (body: unknown, cookie = account.cookie) => stack.http.put(limitsPath(project), body, { cookie });
    for (const bad of [0, -1, 1.5, '10', true, 2 ** 31, {}]) {
      const res = await put({ ...unlimited, transactional: bad });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'transactional' });
    }
    expect((await put({ transactional: 5 })).status).toBe(422); // the others are missing
    expect((await put({ ...unlimited, outbound: 5 })).status).toBe(422); // no such category
    expect((await put([])).status).toBe(422);

    const ok = await put({ transactional: 10, campaigns: null, workflows: 2000, inbound: 1 });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      transactional: { limit: 10, usage: 0 },
      campaigns: { limit: null },
      workflows: { limit: 2000 },
      inbound: { limit: 1, usage: 0, isBlocked: false },
    });

    // A MEMBER reads but may not change; someone outside the project sees no project.
    const member = await signUp(stack.http);
    expect((await stack.http.post(`/projects/${project.id}/members`, { email: member.email, role: 'MEMBER' }, { cookie: account.cookie })).status).toBe(201);
    expect((await stack.http.get(limitsPath(project), { cookie: member.cookie })).body.transactional.limit).toBe(10);
    expect((await put({ ...unlimited }, member.cookie)).status).toBe(403);
    const stranger = await signUp(stack.http);
    expect((await put({ ...unlimited }, stranger.cookie)).status).toBe(404);
    expect((await stack.http.get(limitsPath(project))).status).toBe(401);
    // The warning starts at exactly 80 %.
    await put({ ...unlimited, transactional: 5 });
    await sql(
      `insert into billing_usage (project_id, month, category, used) values (?, date_trunc('month', now() at time zone 'utc')::date, 'transactional', 3)`,
      [project.id],
    );
    expect((await stack.http.get(limitsPath(project), { cookie: account.cookie })).body.transactional).toEqual({
      limit: 5,
      usage: 3,
      percentage: 60,
      isWarning: false,
      isBlocked: false,
    });
    await sql(`update billing_usage set used = 4 where project_id = ?`, [project.id]);
    expect((await stack.http.get(limitsPath(project), { cookie: account.cookie })).body.transactional).toEqual({
      limit: 5,
      usage: 4,
      percentage: 80,
      isWarning: true,
      isBlocked: false,
    });
    // Lifting a cap: null removes it.
    expect((await put({ ...unlimited })).body.transactional.limit).toBeNull();
  });
});

describe('the transactional cap', () => {
  it('lets a send reach the cap exactly, then refuses the next with 402 and records and sends nothing', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    expect((await setLimits(account, project, { transactional: 3 })).status).toBe(200);
    const t = tag();
    expect((await send(project, domain, [`a-${t}@example.org`, `b-${t}@example.org`])).status).toBe(200);
    expect((await getLimits(account, project)).transactional).toEqual({ limit: 3, usage: 2, percentage: 66.7, isWarning: false, isBlocked: false });
    expect((await send(project, domain, `c-${t}@example.org`)).status).toBe(200);
    expect((await getLimits(account, project)).transactional).toEqual({ limit: 3, usage: 3, percentage: 100, isWarning: true, isBlocked: true });

    const over = await send(project, domain, `d-${t}@example.org`);
    expect(over.status).toBe(402);
    expect(over.body.error).toMatchObject({
      code: 'BILLING_LIMIT_EXCEEDED',
      statusCode: 402,
      details: { category: 'transactional', limit: 3, usage: 3, requested: 1 },
    });
    expect(over.body.error.message).toMatch(/transactional cap of 3/);
    expect(await emailCount(project)).toBe(3);
    // Refused before anything was written: not even the contact.
    expect(await sql(`select 1 from contacts where project_id = ? and email = ?`, [project.id, `d-${t}@example.org`])).toHaveLength(0);
    // Every delivery of the project has closed: what was going to be sent has been, once each.
    await projectDeliveriesClosed(stack, project.id);
    expect(['a', 'b', 'c', 'd'].map((r) => receivedBy(`${r}-${t}@example.org`))).toEqual([1, 1, 1, 0]);

    // Other categories are untouched by the transactional cap.
    expect((await getLimits(account, project)).campaigns).toMatchObject({ limit: null, usage: 0 });
    // Raising the cap lets sends through again.
    await setLimits(account, project, { transactional: 4 });
    expect((await send(project, domain, `d-${t}@example.org`)).status).toBe(200);
  });

  it('applies a cap set right after sends without one: the next send is refused before its contact is written', async () => {
    // Sends of a project without a cap remember that answer for a moment (CapUsageLookup); setting a
    // cap through this API must end that at once.
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    const t = tag();
    expect((await send(project, domain, `a-${t}@example.org`)).status).toBe(200);
    expect((await setLimits(account, project, { transactional: 1 })).status).toBe(200);
    const over = await send(project, domain, `b-${t}@example.org`);
    expect(over.status).toBe(402);
    expect(over.body.error.details).toMatchObject({ category: 'transactional', limit: 1, usage: 1 });
    expect(await sql(`select 1 from contacts where project_id = ? and email = ?`, [project.id, `b-${t}@example.org`])).toHaveLength(0);
  });

  it('refuses a multi-recipient send that would pass the cap as a whole: none of its recipients is recorded', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setLimits(account, project, { transactional: 5 });
    const t = tag();
    expect(
      (
        await send(
          project,
          domain,
          [1, 2, 3].map((i) => `m${i}-${t}@example.org`),
        )
      ).status,
    ).toBe(200);
    const over = await send(
      project,
      domain,
      [4, 5, 6].map((i) => `m${i}-${t}@example.org`),
    );
    expect(over.status).toBe(402);
    expect(over.body.error.details).toMatchObject({ category: 'transactional', usage: 3, requested: 3 });
    expect(await emailCount(project)).toBe(3);
    expect(
      (
        await send(
          project,
          domain,
          [4, 5].map((i) => `m${i}-${t}@example.org`),
        )
      ).status,
    ).toBe(200);
    expect((await getLimits(account, project)).transactional).toMatchObject({ usage: 5, isBlocked: true });
  });

  it('lets exactly as many concurrent sends pass as the cap has room for', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setLimits(account, project, { transactional: 3 });
    const t = tag();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => send(project, domain, `race${i}-${t}@example.org`)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 402)).toHaveLength(9);
    expect(await emailCount(project)).toBe(3);
    expect((await getLimits(account, project)).transactional.usage).toBe(3);

    // Two at the very edge (one slot left), many times over: one passes, one is refused.
    for (let round = 0; round < 5; round++) {
      await setLimits(account, project, { transactional: 4 + round });
      const pair = await Promise.all([0, 1].map((i) => send(project, domain, `edge${round}-${i}-${t}@example.org`)));
      expect(pair.map((r) => r.status).sort()).toEqual([200, 402]);
    }
    expect(await emailCount(project)).toBe(8);
  });

  it('does not count SUPPRESSED emails, and gives back what ends FAILED', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setLimits(account, project, { transactional: 1 });
    const t = tag();
    // A suppressed address gets a SUPPRESSED email, which does not count.
    await sql(`insert into email_suppressions (project_id, email, reason) values (?, ?, 'BOUNCE')`, [project.id, `gone-${t}@example.org`]);
    const suppressed = await send(project, domain, `gone-${t}@example.org`);
    expect(suppressed.status).toBe(200);
    expect((await getLimits(account, project)).transactional.usage).toBe(0);

    // The relay refuses this one for good: it ends FAILED and its count is given back.
    const refused = await send(project, domain, 'refused@example.org');
    expect(refused.status).toBe(200);
    expect((await getLimits(account, project)).transactional.usage).toBe(1);
    await eventually(async () => {
      const [row] = await sql(`select status from emails where id = ?`, [refused.body.data.emails[0].email]);
      if (row.status !== 'FAILED') throw new Error(row.status);
    });
    expect((await getLimits(account, project)).transactional.usage).toBe(0);
    expect((await send(project, domain, `ok-${t}@example.org`)).status).toBe(200);
    expect((await send(project, domain, `late-${t}@example.org`)).status).toBe(402);
  });

  it('counts a campaign test email against the campaigns cap', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setLimits(account, project, { campaigns: 1 });
    const campaign = await stack.http.post(
      '/campaigns',
      { name: 'N', subject: 'S', body: '<p>B</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    const test = (to: string) => stack.http.post(`/campaigns/${campaign.body.data.id}/test`, { email: to }, { key: project.secretKey });
    expect((await test(`t1-${tag()}@example.org`)).status).toBe(200);
    const over = await test(`t2-${tag()}@example.org`);
    expect(over.status).toBe(402);
    expect(over.body.error.details.category).toBe('campaigns');
    // The transactional category is another budget.
    expect((await send(project, domain, `tx-${tag()}@example.org`)).status).toBe(200);
  });
});

describe('the workflows cap (the service the automation SEND_EMAIL step records through)', () => {
  it("records all of a step's emails within the cap, or none of them past it", async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    await setLimits(account, project, { workflows: 2 });
    const contact = await stack.http.post('/contacts', { email: `wf-${tag()}@example.org` }, { key: project.secretKey });
    const email = (): NewEmail => {
      const id = crypto.randomUUID();
      return {
        id,
        projectId: project.id,
        contactId: contact.body.id,
        templateId: null,
        source: 'WORKFLOW',
        type: 'TRANSACTIONAL',
        subject: 'S',
        fromAddress: `hi@${domain}`,
        fromName: null,
        replyTo: null,
        toAddress: contact.body.email,
        toName: null,
        html: '<p>x</p>',
        text: 'x',
        headers: null,
        attachmentSetId: null,
        status: 'QUEUED',
        messageId: `<${id}@${domain}>`,
        deliveryWorkflowId: null,
      };
    };
    await recordCountedEmails(stack.orm.em.fork(), [email()]);
    const refused = await recordCountedEmails(stack.orm.em.fork(), [email(), email()]).catch((err) => err);
    expect(refused).toBeInstanceOf(BillingLimitExceeded);
    expect(refused).toMatchObject({ category: 'workflows', limit: 2, used: 1, requested: 2 });
    expect(await emailCount(project, 'WORKFLOW')).toBe(1);
    // Concurrent steps at the edge: one slot left, one of them gets it.
    const outcomes = await Promise.allSettled([0, 1, 2].map(() => recordCountedEmails(stack.orm.em.fork(), [email()])));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect(await emailCount(project, 'WORKFLOW')).toBe(2);
    expect((await getLimits(account, project)).workflows).toEqual({ limit: 2, usage: 2, percentage: 100, isWarning: true, isBlocked: true });
  });
});

describe('an automation execution reaching the workflows cap', () => {
  it('sends while the cap has room, then stops: FAILED with BILLING_LIMIT_EXCEEDED in its error, nothing recorded past it', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    const key = { key: project.secretKey };
    await setLimits(account, project, { workflows: 1 });
    const template = await stack.http.post(
      '/templates',
      { name: 'Welcome', subject: 'Welcome', body: '<p>Hi</p>', from: `hi@${domain}`, type: 'TRANSACTIONAL' },
      key,
    );
    const workflow = (await stack.http.post('/workflows', { name: 'Capped', eventName: 'joined' }, key)).body;
    const trigger = workflow.steps.find((s: { type: string }) => s.type === 'TRIGGER').id;
    const mail = await stack.http.post(`/workflows/${workflow.id}/steps`, { type: 'SEND_EMAIL', config: { templateId: template.body.id } }, key);
    expect((await stack.http.post(`/workflows/${workflow.id}/transitions`, { fromStepId: trigger, toStepId: mail.body.id }, key)).status).toBe(201);
    expect((await stack.http.patch(`/workflows/${workflow.id}`, { enabled: true }, key)).status).toBe(200);

    const first = `first-${tag()}@example.org`;
    const second = `second-${tag()}@example.org`;
    await stack.http.post('/v1/track', { email: first, event: 'joined' }, { key: project.publicKey });
    const statusOf = (address: string) =>
      eventually(async () => {
        const [row] = await sql(
          `select x.status, x.error from workflow_executions x join contacts c on c.id = x.contact_id where x.workflow_id = ? and c.email = ?`,
          [workflow.id, address],
        );
        if (!row || !['COMPLETED', 'FAILED'].includes(row.status)) throw new Error(`not ended: ${JSON.stringify(row)}`);
        return row as { status: string; error: string | null };
      });
    expect(await statusOf(first)).toMatchObject({ status: 'COMPLETED' });
    await stack.http.post('/v1/track', { email: second, event: 'joined' }, { key: project.publicKey });
    const stopped = await statusOf(second);
    expect(stopped.status).toBe('FAILED');
    expect(stopped.error).toContain('BILLING_LIMIT_EXCEEDED');
    expect(await emailCount(project, 'WORKFLOW')).toBe(1);
    await eventually(async () => expect(receivedBy(first)).toBe(1));
    expect(receivedBy(second)).toBe(0);
  });
});

describe('a campaign reaching its cap', () => {
  it('sends up to the cap, then stops: CANCELLED with the reason, and the next send is refused', async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    const prefix = `cap-${tag()}`;
    const rows = Array.from({ length: 20 }, (_, i) => ({ email: `${prefix}-${i}@example.org` }));
    await sql(`insert into contacts (project_id, email, subscribed) select ?, r.email, true from jsonb_to_recordset(?::jsonb) as r(email text)`, [
      project.id,
      JSON.stringify(rows),
    ]);
    await setLimits(account, project, { campaigns: 7 });
    const created = await stack.http.post(
      '/campaigns',
      { name: 'Capped', subject: 'Hi', body: '<p>News</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    const id = created.body.data.id;
    expect((await stack.http.post(`/campaigns/${id}/send`, {}, { key: project.secretKey })).status).toBe(200);

    const stopped = await eventually(async () => {
      const campaign = (await stack.http.get(`/campaigns/${id}`, { key: project.secretKey })).body;
      if (campaign.status !== 'CANCELLED') throw new Error(campaign.status);
      return campaign;
    }, 60_000);
    expect(stopped.stopReason).toMatchObject({
      code: 'BILLING_LIMIT_EXCEEDED',
      category: 'campaigns',
      limit: 7,
      message: expect.stringMatching(/campaigns cap of 7/),
    });
    const result = await stack.temporal.workflow.getHandle(`campaign-${id}`).result();
    expect(result).toMatchObject({ phase: 'STOPPED_AT_CAP', sent: 7 });
    expect(await emailCount(project, 'CAMPAIGN')).toBe(7);
    await eventually(() => smtp.messages.filter((m) => m.envelopeTo[0].startsWith(`${prefix}-`)).length === 7);
    expect((await getLimits(account, project)).campaigns).toMatchObject({ limit: 7, usage: 7, isBlocked: true });

    // With the cap used up, a new campaign is refused at once.
    const next = await stack.http.post(
      '/campaigns',
      { name: 'Next', subject: 'Hi', body: '<p>News</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    const refused = await stack.http.post(`/campaigns/${next.body.data.id}/send`, {}, { key: project.secretKey });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({ code: 'BILLING_LIMIT_EXCEEDED', details: { category: 'campaigns' } });
    expect((await stack.http.get(`/campaigns/${next.body.data.id}`, { key: project.secretKey })).body.status).toBe('DRAFT');
  });
});

describe('with billing off', () => {
  it('answers 404 on every Stripe endpoint and says billing is off', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const base = `/users/@me/projects/${project.id}`;
    for (const [method, path] of [
      ['POST', `${base}/checkout`],
      ['POST', `${base}/billing-portal`],
      ['GET', `${base}/billing-consumption`],
      ['GET', `${base}/billing-invoices`],
      ['POST', '/webhooks/incoming/stripe'],
    ]) {
      const res = await stack.http.request(method, path, { cookie: account.cookie, body: method === 'POST' ? {} : undefined });
      expect([path, res.status]).toEqual([path, 404]);
    }
    expect((await stack.http.get('/config')).body.billing).toBe(false);
    const setup = await stack.http.get(`/projects/${project.id}/setup-state`, { cookie: account.cookie });
    expect(setup.body.steps).not.toHaveProperty('subscriptionActive');
  });
});
