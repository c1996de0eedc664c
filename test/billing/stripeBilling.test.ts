import crypto from 'node:crypto';
import Stripe from 'stripe';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { startStripeServer, type TestStripeServer } from '../support/stripeServer';
import { signUp, type TestAccount, type TestProject } from '../support/accounts';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { billingUsageReportWorkflow } from '../../workflows';
import { eventually } from '../support/eventually';
import { activitiesFinished } from '../support/temporalRuns';
import { sendEmailStep } from '../../services/automation/steps/sendEmailStep';
import { StepConfigError } from '../../services/automation/stepConfigs';
import { contactRepository } from '../../db/contacts/contactRepository';

/**
 * Billing with Stripe (contract 17): the official `stripe` package against a local server that
 * answers Stripe's API routes, and webhooks signed with the package's own test-header helper.
 */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stripeApi: TestStripeServer;
let stack: TestStack;
const webhookSecret = `whsec_${crypto.randomBytes(16).toString('hex')}`;
// Only for its webhook helpers: signing test payloads exactly as Stripe does.
const stripe = new Stripe('sk_test_for_signatures_only');

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stripeApi = await startStripeServer();
  stack = await startTestStack({
    env: {
      DNS_SERVERS: dns.address,
      DNS_TIMEOUT_MS: '2500',
      SMTP_URL: smtp.url,
      STRIPE_SECRET_KEY: stripeApi.secretKey,
      STRIPE_WEBHOOK_SECRET: webhookSecret,
      STRIPE_PRICE_ID: 'price_mailroom_emails',
      STRIPE_METER_EVENT_NAME: 'mailroom_emails',
      STRIPE_API_URL: stripeApi.url,
    },
  });
});

afterAll(async () => {
  await stack?.stop();
  await stripeApi?.close();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);
const base = (project: TestProject) => `/users/@me/projects/${project.id}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

function stripeEvent(type: string, object: Record<string, unknown>, created = nowSeconds()) {
  return {
    id: `evt_${crypto.randomBytes(10).toString('hex')}`,
    object: 'event',
    api_version: '2026-10-28.endive',
    created,
    type,
    livemode: false,
    pending_webhooks: 1,
    data: { object },
  };
}

function postWebhook(payload: string, signature: string | null) {
  return stack.http.request('POST', '/webhooks/incoming/stripe', {
    rawBody: payload,
    headers: { 'Content-Type': 'application/json', ...(signature === null ? {} : { 'Stripe-Signature': signature }) },
  });
}

/** Delivers an event as Stripe does: the exact bytes, signed with the endpoint's secret. */
function deliver(event: object, secret = webhookSecret) {
  const payload = JSON.stringify(event);
  return postWebhook(payload, stripe.webhooks.generateTestHeaderString({ payload, secret }));
}

function subscription(customer: string, status: string, projectId?: string) {
  const start = nowSeconds() - 3600;
  return {
    id: `sub_${crypto.randomBytes(6).toString('hex')}`,
    object: 'subscription',
    customer,
    status,
    metadata: projectId ? { projectId } : {},
    items: {
      object: 'list',
      data: [
        {
          id: 'si_1',
          object: 'subscription_item',
          current_period_start: start,
          current_period_end: start + 30 * 86400,
          price: { id: 'price_mailroom_emails' },
        },
      ],
    },
  };
}

async function checkout(account: TestAccount, project: TestProject) {
  const res = await stack.http.post(`${base(project)}/checkout`, {}, { cookie: account.cookie });
  expect(res.status).toBe(200);
  const [row] = await sql(`select stripe_customer_id from billing_accounts where project_id = ?`, [project.id]);
  return { url: res.body.url as string, customer: row.stripe_customer_id as string };
}

/** A project with a verified domain and an active subscription, as after a completed checkout. */
async function subscribedProject() {
  const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
  const { customer } = await checkout(account, project);
  expect((await deliver(stripeEvent('customer.subscription.created', subscription(customer, 'active', project.id)))).body.outcome).toBe('applied');
  return { account, project, domain, customer };
}

const sendTo = (project: TestProject, domain: string, to: string[]) =>
  stack.http.post('/v1/send', { to, from: `hello@${domain}`, subject: 'Hi', body: '<p>Hello</p>' }, { key: project.secretKey });

describe('GET /config and setup-state with billing on', () => {
  it('reports billing enabled, and the subscription step', async () => {
    expect((await stack.http.get('/config')).body.billing).toBe(true);
    const { account, project, customer } = await (async () => {
      const { account, project } = await projectWithVerifiedDomain(stack, dns);
      const { customer } = await checkout(account, project);
      return { account, project, customer };
    })();
    const setup = () => stack.http.get(`/projects/${project.id}/setup-state`, { cookie: account.cookie });
    expect((await setup()).body.steps.subscriptionActive).toBe(false);
    await deliver(stripeEvent('customer.subscription.created', subscription(customer, 'active', project.id)));
    expect((await setup()).body.steps.subscriptionActive).toBe(true);
  });
});

describe('checkout, billing portal, consumption and invoices', () => {
  it('checkout creates one customer per project and a subscription Checkout Session for the configured price', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const first = await checkout(account, project);
    expect(first.url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
    const second = await checkout(account, project);
    expect(second.customer).toBe(first.customer);

    const customerCreations = stripeApi.requests.filter((r) => r.path === '/v1/customers' && r.params['metadata[projectId]'] === project.id);
    expect(customerCreations).toHaveLength(1);
    expect(customerCreations[0]).toMatchObject({
      idempotencyKey: `mailroom-customer-${project.id}`,
      params: expect.objectContaining({ email: account.email }),
    });
    const sessions = stripeApi.requests.filter((r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === project.id);
    expect(sessions).toHaveLength(2);
    expect(sessions[0].params).toMatchObject({
      mode: 'subscription',
      customer: first.customer,
      'line_items[0][price]': 'price_mailroom_emails',
      success_url: 'http://mailroom.test/billing?checkout=success',
      'subscription_data[metadata][projectId]': project.id,
    });

    // Custom return URLs are taken; anything else is refused before Stripe is called.
    const custom = await stack.http.post(
      `${base(project)}/checkout`,
      { successUrl: 'https://app.example.com/ok', cancelUrl: 'https://app.example.com/no' },
      { cookie: account.cookie },
    );
    expect(custom.status).toBe(200);
    for (const body of [{ successUrl: 'javascript:alert(1)' }, { successUrl: 'not a url' }, { price: 'price_other' }]) {
      expect((await stack.http.post(`${base(project)}/checkout`, body, { cookie: account.cookie })).status).toBe(422);
    }

    // Subscribed: a second subscription is refused; the portal is the way to change it.
    await deliver(stripeEvent('customer.subscription.created', subscription(first.customer, 'active', project.id)));
    const again = await stack.http.post(`${base(project)}/checkout`, {}, { cookie: account.cookie });
    expect(again.status).toBe(409);
  });

  it('checkout and the portal need OWNER or ADMIN; outsiders see no project', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const member = await signUp(stack.http);
    await stack.http.post(`/projects/${project.id}/members`, { email: member.email, role: 'MEMBER' }, { cookie: account.cookie });
    expect((await stack.http.post(`${base(project)}/checkout`, {}, { cookie: member.cookie })).status).toBe(403);
    expect((await stack.http.post(`${base(project)}/billing-portal`, {}, { cookie: member.cookie })).status).toBe(403);
    expect((await stack.http.get(`${base(project)}/billing-consumption`, { cookie: member.cookie })).status).toBe(200);
    const stranger = await signUp(stack.http);
    expect((await stack.http.post(`${base(project)}/checkout`, {}, { cookie: stranger.cookie })).status).toBe(404);
    expect((await stack.http.post(`${base(project)}/checkout`, {})).status).toBe(401);
  });

  it('the billing portal needs a customer first, then answers its URL', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const before = await stack.http.post(`${base(project)}/billing-portal`, {}, { cookie: account.cookie });
    expect(before.status).toBe(409);
    const { customer } = await checkout(account, project);
    const portal = await stack.http.post(`${base(project)}/billing-portal`, { returnUrl: 'https://app.example.com/settings' }, { cookie: account.cookie });
    expect(portal.status).toBe(200);
    expect(portal.body.url).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\//);
    expect(stripeApi.requests.filter((r) => r.path === '/v1/billing_portal/sessions').at(-1)!.params).toEqual({
      customer,
      return_url: 'https://app.example.com/settings',
    });
  });

  it('consumption counts this month by category; invoices are listed as Stripe lists them', async () => {
    const { account, project, domain, customer } = await subscribedProject();
    expect((await sendTo(project, domain, ['c1@example.org', 'c2@example.org'])).status).toBe(200);
    const consumption = await stack.http.get(`${base(project)}/billing-consumption`, { cookie: account.cookie });
    const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
    expect(consumption.body).toEqual({
      periodStart: monthStart.toISOString(),
      periodEnd: new Date(Date.UTC(monthStart.getUTCFullYear(), monthStart.getUTCMonth() + 1, 1)).toISOString(),
      emails: 2,
      byCategory: { transactional: 2, campaigns: 0, workflows: 0, inbound: 0 },
    });

    stripeApi.invoices.set(customer, [
      { id: 'in_001', object: 'invoice', customer, status: 'paid', amount_due: 1200, currency: 'eur' },
      { id: 'in_002', object: 'invoice', customer, status: 'open', amount_due: 300, currency: 'eur' },
    ]);
    const invoices = await stack.http.get(`${base(project)}/billing-invoices?limit=1`, { cookie: account.cookie });
    expect(invoices.status).toBe(200);
    expect(invoices.body).toEqual({ data: [expect.objectContaining({ id: 'in_001', status: 'paid', amount_due: 1200 })], hasMore: true });
    const next = await stack.http.get(`${base(project)}/billing-invoices?limit=1&startingAfter=in_001`, { cookie: account.cookie });
    expect(next.body).toEqual({ data: [expect.objectContaining({ id: 'in_002' })], hasMore: false });
    expect((await stack.http.get(`${base(project)}/billing-invoices?limit=0`, { cookie: account.cookie })).status).toBe(400);
    expect((await stack.http.get(`${base(project)}/billing-invoices?startingAfter=x'--`, { cookie: account.cookie })).status).toBe(400);

    // No customer yet: no invoices, and Stripe is not asked.
    const { account: other, project: fresh } = await projectWithVerifiedDomain(stack, dns);
    expect((await stack.http.get(`${base(fresh)}/billing-invoices`, { cookie: other.cookie })).body).toEqual({ data: [], hasMore: false });
  });

  it('a Stripe error answers 502 and changes nothing', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    stripeApi.failNext('/v1/customers', 3, 500);
    const res = await stack.http.post(`${base(project)}/checkout`, {}, { cookie: account.cookie });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('PAYMENT_PROVIDER_ERROR');
    expect(await sql(`select 1 from billing_accounts where project_id = ?`, [project.id])).toHaveLength(0);
    stripeApi.failNext('/v1/customers', 0);
  });
});

describe('POST /webhooks/incoming/stripe', () => {
  it('applies a correctly signed subscription event, and refuses forged, tampered, stale and unsigned ones', async () => {
    const { account, project } = await projectWithVerifiedDomain(stack, dns);
    const { customer } = await checkout(account, project);
    const sub = subscription(customer, 'active');
    const created = stripeEvent('customer.subscription.created', sub);
    const ok = await deliver(created);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ received: true, outcome: 'applied' });
    const [row] = await sql(`select stripe_subscription_id, subscription_status, current_period_end from billing_accounts where project_id = ?`, [project.id]);
    expect(row).toMatchObject({ stripe_subscription_id: sub.id, subscription_status: 'active' });
    expect(new Date(row.current_period_end).getTime()).toBe((sub.items.data[0].current_period_start + 30 * 86400) * 1000);

    const cancelled = stripeEvent('customer.subscription.deleted', { ...sub, status: 'canceled' });
    // Signed with another secret: refused, nothing applied.
    const forged = await deliver(cancelled, 'whsec_not_the_endpoint_secret');
    expect(forged.status).toBe(400);
    expect(forged.body.error.code).toBe('INVALID_SIGNATURE');
    // A valid signature over other bytes.
    const payload = JSON.stringify(cancelled);
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret });
    expect((await postWebhook(payload.replace('canceled', 'active__'), signature)).status).toBe(400);
    // Signed too long ago (a captured request sent again later).
    const old = stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret, timestamp: nowSeconds() - 3600 });
    expect((await postWebhook(payload, old)).status).toBe(400);
    expect((await postWebhook(payload, null)).status).toBe(400);
    expect((await postWebhook('not json', stripe.webhooks.generateTestHeaderString({ payload: 'not json', secret: webhookSecret }))).status).toBe(400);
    expect((await sql(`select subscription_status from billing_accounts where project_id = ?`, [project.id]))[0].subscription_status).toBe('active');

    // The real delivery applies; the same event delivered again (Stripe retries) changes nothing.
    expect((await deliver(cancelled)).body.outcome).toBe('applied');
    expect((await sql(`select subscription_status from billing_accounts where project_id = ?`, [project.id]))[0].subscription_status).toBe('canceled');
    await sql(`update billing_accounts set subscription_status = 'active' where project_id = ?`, [project.id]);
    const replay = await deliver(cancelled);
    expect(replay.status).toBe(200);
    expect(replay.body.outcome).toBe('duplicate');
    expect((await sql(`select subscription_status from billing_accounts where project_id = ?`, [project.id]))[0].subscription_status).toBe('active');

    // An update older than the last one applied (Stripe does not promise order) is acknowledged, not applied.
    const late = await deliver(stripeEvent('customer.subscription.updated', { ...sub, status: 'past_due' }, created.created - 60));
    expect(late.body.outcome).toBe('stale');
    // Events Mailroom does not act on, and customers it does not know, are acknowledged.
    expect((await deliver(stripeEvent('charge.refunded', { id: 'ch_1', object: 'charge' }))).body.outcome).toBe('ignored');
    expect((await deliver(stripeEvent('invoice.payment_failed', { id: 'in_x', object: 'invoice', customer: 'cus_unknown' }))).body.outcome).toBe(
      'unknown-customer',
    );
  });

  it('a failed payment disables the project (sends answer 403 PROJECT_DISABLED); a paid invoice enables it again', async () => {
    const { account, project, domain, customer } = await subscribedProject();
    expect((await sendTo(project, domain, ['before@example.org'])).status).toBe(200);
    const failedAt = nowSeconds();
    const failed = await deliver(stripeEvent('invoice.payment_failed', { id: 'in_f', object: 'invoice', customer, status: 'open' }, failedAt));
    expect(failed.body.outcome).toBe('applied');

    const refused = await sendTo(project, domain, ['during@example.org']);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'PROJECT_DISABLED', details: { disabledReason: 'PAYMENT_FAILED' } });
    expect(refused.body.error.message).toMatch(/payment failed/);
    expect(await sql(`select 1 from emails where to_address = 'during@example.org' and project_id = ?`, [project.id])).toHaveLength(0);
    const projects = await stack.http.get('/users/@me/projects', { cookie: account.cookie });
    expect(projects.body.find((p: { id: string }) => p.id === project.id)).toMatchObject({ disabled: true, disabledReason: 'PAYMENT_FAILED' });
    // The dashboard still reaches billing, to fix the payment.
    expect((await stack.http.post(`${base(project)}/billing-portal`, {}, { cookie: account.cookie })).status).toBe(200);

    // A success older than the failure does not undo it; a newer one does.
    expect((await deliver(stripeEvent('invoice.paid', { id: 'in_o', object: 'invoice', customer }, failedAt - 100))).body.outcome).toBe('stale');
    expect((await sendTo(project, domain, ['still@example.org'])).status).toBe(403);
    expect((await deliver(stripeEvent('invoice.paid', { id: 'in_f', object: 'invoice', customer, status: 'paid' }, failedAt + 1))).body.outcome).toBe(
      'applied',
    );
    expect((await sendTo(project, domain, ['after@example.org'])).status).toBe(200);

    // A project disabled for another reason stays disabled whatever Stripe says.
    await sql(`update projects set disabled = true, disabled_reason = 'ABUSE' where id = ?`, [project.id]);
    await deliver(stripeEvent('invoice.paid', { id: 'in_g', object: 'invoice', customer }, failedAt + 2));
    expect((await sql(`select disabled, disabled_reason from projects where id = ?`, [project.id]))[0]).toEqual({ disabled: true, disabled_reason: 'ABUSE' });
  });
});

describe('a campaign of a project disabled for payment', () => {
  it('stops while SENDING: CANCELLED with the reason, nothing sent after it, its unattempted emails withdrawn', async () => {
    const { account, project, domain, customer } = await subscribedProject();
    // 25 mails a second, so the send is still running when the payment fails.
    expect((await stack.http.patch(base(project), { campaignRatePerSecond: 25 }, { cookie: account.cookie })).status).toBe(200);
    const prefix = `unpaid-${crypto.randomBytes(4).toString('hex')}`;
    const rows = Array.from({ length: 300 }, (_, i) => ({ email: `${prefix}-${String(i).padStart(3, '0')}@example.org` }));
    await sql(`insert into contacts (project_id, email, subscribed) select ?, r.email, true from jsonb_to_recordset(?::jsonb) as r(email text)`, [
      project.id,
      JSON.stringify(rows),
    ]);
    const created = await stack.http.post(
      '/campaigns',
      { name: 'Unpaid', subject: 'Hi', body: '<p>News</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    const id = created.body.data.id;
    expect((await stack.http.post(`/campaigns/${id}/send`, {}, { key: project.secretKey })).status).toBe(200);
    const received = () => smtp.messages.filter((m) => m.envelopeTo[0].startsWith(`${prefix}-`)).length;
    await smtp.waitFor((m) => m.envelopeTo[0].startsWith(`${prefix}-`), 60_000);

    const failedAt = nowSeconds();
    const failed = await deliver(stripeEvent('invoice.payment_failed', { id: 'in_c', object: 'invoice', customer, status: 'open' }, failedAt));
    expect(failed.body.outcome).toBe('applied');
    const result = await stack.temporal.workflow.getHandle(`campaign-${id}`).result();
    expect(result).toMatchObject({ phase: 'CANCELLED' });
    // The project's API answers 403 PROJECT_DISABLED while it is disabled; paid again, it shows why the campaign stopped.
    expect((await stack.http.get(`/campaigns/${id}`, { key: project.secretKey })).body.error.code).toBe('PROJECT_DISABLED');
    await deliver(stripeEvent('invoice.paid', { id: 'in_c', object: 'invoice', customer, status: 'paid' }, failedAt + 1));
    const campaign = (await stack.http.get(`/campaigns/${id}`, { key: project.secretKey })).body;
    expect(campaign.status).toBe('CANCELLED');
    expect(campaign.stopReason).toMatchObject({ code: 'PROJECT_DISABLED', disabledReason: 'PAYMENT_FAILED', message: expect.stringMatching(/payment failed/) });
    expect(stack.logs.some((l) => l.msg === 'campaign: the project is disabled; the send stops' && l.campaignId === id)).toBe(true);

    // The run has closed and its activities returned: nothing sends for this campaign any more.
    await activitiesFinished(stack);
    const sent = (await sql(`select count(*)::int as n from emails where campaign_id = ? and sent_at is not null`, [id]))[0].n;
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan(rows.length);
    expect(await sql(`select 1 from emails where campaign_id = ? and status = 'QUEUED' and attempts = 0`, [id])).toHaveLength(0);
    await eventually(() => received() === sent);
  }, 120_000);

  it("an automation's SEND_EMAIL step sends nothing: the execution fails with PROJECT_DISABLED", async () => {
    const { project, domain, customer } = await subscribedProject();
    const key = { key: project.secretKey };
    const template = await stack.http.post('/templates', { name: 'Hi', subject: 'Hi', body: '<p>Hi</p>', from: `hi@${domain}`, type: 'TRANSACTIONAL' }, key);
    const to = `step-${crypto.randomBytes(4).toString('hex')}@example.org`;
    const created = await stack.http.post('/contacts', { email: to }, key);
    const contact = (await contactRepository.findById(stack.orm.em.fork(), project.id, created.body.id))!;
    expect((await deliver(stripeEvent('invoice.payment_failed', { id: 'in_s', object: 'invoice', customer, status: 'open' }))).body.outcome).toBe('applied');

    // The step as an execution runs it (the walk turns a StepConfigError into FAILED with its message).
    const step = sendEmailStep(
      stack.orm.em.fork(),
      { config: stack.config, orm: stack.orm, transport: stack.mail, eventTriggers: stack.eventTriggers },
      {
        projectId: project.id,
        executionId: crypto.randomUUID(),
        sequence: 0,
        contact,
        context: {},
        config: { templateId: template.body.id },
        templateId: null,
      },
    );
    await expect(step).rejects.toBeInstanceOf(StepConfigError);
    await expect(step).rejects.toThrow(/PROJECT_DISABLED: the project is disabled because its last payment failed/);
    expect(await sql(`select 1 from emails where project_id = ? and source = 'WORKFLOW'`, [project.id])).toHaveLength(0);
  });
});

describe('the hourly usage report to Stripe', () => {
  const runReport = (name: string) =>
    stack.temporal.workflow.execute(billingUsageReportWorkflow, {
      taskQueue: stack.config.temporalTaskQueue,
      workflowId: `billing-report-${name}-${crypto.randomBytes(4).toString('hex')}`,
    });
  const eventsFor = (customer: string) => [...stripeApi.meterEvents.values()].filter((e) => e['payload[stripe_customer_id]'] === customer);

  it('reports new usage as meter events, through an outage, without reporting anything twice', async () => {
    // What earlier tests' projects owe goes first, so this project's report is the only one.
    await runReport('earlier');
    const { project, domain, customer } = await subscribedProject();
    expect((await sendTo(project, domain, ['u1@example.org', 'u2@example.org', 'u3@example.org'])).status).toBe(200);

    // Stripe answers 500 twice, then recovers: the report goes through on a retry, once.
    stripeApi.failNext('/v1/billing/meter_events', 2, 500);
    const first = await runReport('outage');
    expect(first).toEqual({ planned: 1, reported: 1, left: 0 });
    expect(eventsFor(customer)).toEqual([expect.objectContaining({ event_name: 'mailroom_emails', 'payload[value]': '3' })]);
    const [report] = await sql(`select id, attempts, reported_at, from_total, to_total from billing_usage_reports where project_id = ?`, [project.id]);
    expect(report).toMatchObject({ attempts: 3, from_total: '0', to_total: '3' });
    const attempts = stripeApi.requests.filter((r) => r.path === '/v1/billing/meter_events' && r.params.identifier === report.id);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.idempotencyKey))).toEqual(new Set([`mailroom-usage-${report.id}`]));

    // Nothing new: nothing reported. Two more emails: a report of 2.
    await runReport('quiet');
    expect(eventsFor(customer)).toHaveLength(1);
    expect((await sendTo(project, domain, ['u4@example.org', 'u5@example.org'])).status).toBe(200);
    await runReport('more');
    expect(eventsFor(customer).map((e) => e['payload[value]'])).toEqual(['3', '2']);
  });

  it('keeps a report Stripe refused and sends it in a later run', async () => {
    await runReport('earlier');
    const { project, domain, customer } = await subscribedProject();
    expect((await sendTo(project, domain, ['r1@example.org'])).status).toBe(200);
    stripeApi.failNext('/v1/billing/meter_events', 1, 400);
    const refused = await runReport('refused');
    expect(refused).toEqual({ planned: 1, reported: 0, left: 1 });
    expect(eventsFor(customer)).toHaveLength(0);
    const [pending] = await sql(`select reported_at, last_error from billing_usage_reports where project_id = ?`, [project.id]);
    expect(pending.reported_at).toBeNull();
    expect(pending.last_error).toMatch(/went wrong/);

    await runReport('recovered');
    expect(eventsFor(customer).map((e) => e['payload[value]'])).toEqual(['1']);
    expect(await sql(`select 1 from billing_usage_reports where project_id = ? and reported_at is null`, [project.id])).toHaveLength(0);
  });

  it('reports nothing for a project without a subscription', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    expect((await sendTo(project, domain, ['free@example.org'])).status).toBe(200);
    await runReport('unsubscribed');
    expect(await sql(`select 1 from billing_usage_reports where project_id = ?`, [project.id])).toHaveLength(0);
  });
});
