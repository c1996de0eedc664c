import crypto from 'node:crypto';
import Stripe from 'stripe';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { startStripeServer, type TestStripeServer } from '../support/stripeServer';
import { launchChromium } from '../support/browser';
import { accountWithProject, signUp, type TestAccount, type TestProject } from '../support/accounts';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// Contract 17 and 21: with Stripe billing on, Settings shows the project's subscription, "Upgrade"
// goes to the Checkout page POST …/checkout answers, "Manage billing" to the portal page, a return
// from Stripe shows a note, and only owners and admins get the buttons.

let stripeApi: TestStripeServer;
let stack: TestStack;
let browser: Browser;
let owner: TestAccount;
let project: TestProject;
let member: TestAccount;
const webhookSecret = `whsec_${crypto.randomBytes(16).toString('hex')}`;
// Only for its webhook helper: signing test payloads exactly as Stripe does.
const stripe = new Stripe('sk_test_for_signatures_only');

beforeAll(async () => {
  ensureDashboardBuilt();
  stripeApi = await startStripeServer();
  [stack, browser] = await Promise.all([
    startTestStack({
      worker: false,
      env: {
        STRIPE_SECRET_KEY: stripeApi.secretKey,
        STRIPE_WEBHOOK_SECRET: webhookSecret,
        STRIPE_PRICE_ID: 'price_mailroom_emails',
        STRIPE_METER_EVENT_NAME: 'mailroom_emails',
        STRIPE_API_URL: stripeApi.url,
      },
    }),
    launchChromium(),
  ]);
  ({ account: owner, project } = await accountWithProject(stack.http));
  member = await signUp(stack.http);
  const added = await stack.http.post(`/projects/${project.id}/members`, { email: member.email, role: 'MEMBER' }, { cookie: owner.cookie });
  expect(added.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await stripeApi?.close();
});

async function signedIn(account: TestAccount, width: number): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url, httpOnly: true, sameSite: 'Lax' }]);
  return { context, page: await context.newPage() };
}

/** The browser's requests to a Stripe page: answered here (the fake API serves no pages), and recorded. */
async function catchStripePages(page: Page): Promise<string[]> {
  const visited: string[] = [];
  await page.route(/^https:\/\/(checkout|billing)\.stripe\.test\//, async (route) => {
    visited.push(route.request().url());
    await route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><html lang="en"><title>Stripe</title><h1>Stripe</h1></html>' });
  });
  return visited;
}

/** A signed customer.subscription.created for the project's customer, as Stripe sends after a completed checkout. */
async function subscriptionCreated(customer: string) {
  const start = Math.floor(Date.now() / 1000) - 3600;
  const event = {
    id: `evt_${crypto.randomBytes(10).toString('hex')}`,
    object: 'event',
    api_version: '2026-10-28.endive',
    created: Math.floor(Date.now() / 1000),
    type: 'customer.subscription.created',
    livemode: false,
    pending_webhooks: 1,
    data: {
      object: {
        id: `sub_${crypto.randomBytes(6).toString('hex')}`,
        object: 'subscription',
        customer,
        status: 'active',
        metadata: { projectId: project.id },
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
      },
    },
  };
  const payload = JSON.stringify(event);
  const res = await stack.http.request('POST', '/webhooks/incoming/stripe', {
    rawBody: payload,
    headers: { 'Content-Type': 'application/json', 'Stripe-Signature': stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret }) },
  });
  expect(res.status).toBe(200);
}

test('Billing: Upgrade goes to Stripe Checkout, the return shows a note, then Manage billing opens the portal', async () => {
  const settingsUrl = `${stack.api.url}/app/projects/${project.id}/settings`;
  const { context, page } = await signedIn(owner, 1280);
  const visited = await catchStripePages(page);
  await page.goto(settingsUrl);
  const card = page.getByRole('region', { name: 'Billing' });
  await card.getByText('Not subscribed').waitFor();
  expect(await card.getByRole('button', { name: 'Manage billing' }).count()).toBe(0);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('settings-billing-1280'), fullPage: true });

  // Upgrade: the browser goes to the Checkout page the (fake) Stripe created.
  await card.getByRole('button', { name: 'Upgrade' }).click();
  await page.waitForURL(/^https:\/\/checkout\.stripe\.test\//);
  const created = stripeApi.requests.filter((r) => r.path === '/v1/checkout/sessions');
  expect(created).toHaveLength(1);
  expect(visited).toHaveLength(1);
  expect(visited[0]).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
  // Stripe is told to send the browser back to this page, with the outcome.
  expect(created[0].params.success_url).toBe(`${settingsUrl}?billing=success`);
  expect(created[0].params.cancel_url).toBe(`${settingsUrl}?billing=cancelled`);
  const customer = created[0].params.customer;

  // Cancelled on Stripe's page: back with a note.
  await page.goto(created[0].params.cancel_url);
  await card.getByRole('status').getByText('Checkout cancelled').waitFor();
  await card.getByRole('button', { name: 'Dismiss' }).click();
  await card.getByRole('status').waitFor({ state: 'detached' });
  expect(new URL(page.url()).search).toBe('');

  // Paid: back with a note, and the subscription shows once Stripe's webhook has landed.
  await page.goto(created[0].params.success_url);
  await card.getByRole('status').getByText('Checkout complete').waitFor();
  await subscriptionCreated(customer);
  await card.getByText('Active', { exact: true }).waitFor({ timeout: 10_000 });
  expect(await card.getByRole('button', { name: 'Upgrade' }).count()).toBe(0);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('settings-billing-active-1280'), fullPage: true });

  // Manage billing: the portal page, returning here.
  await card.getByRole('button', { name: 'Manage billing' }).click();
  await page.waitForURL(/^https:\/\/billing\.stripe\.test\//);
  const portal = stripeApi.requests.filter((r) => r.path === '/v1/billing_portal/sessions');
  expect(portal).toHaveLength(1);
  expect(portal[0].params.customer).toBe(customer);
  expect(portal[0].params.return_url).toBe(`${settingsUrl}?billing=portal`);
  await context.close();

  // At 390 px the card fits.
  const narrow = await signedIn(owner, 390);
  await narrow.page.goto(`${settingsUrl}?billing=portal`);
  await narrow.page.getByRole('region', { name: 'Billing' }).getByText('Back from the billing portal', { exact: false }).waitFor();
  await narrow.page.getByRole('region', { name: 'Billing' }).getByRole('button', { name: 'Manage billing' }).waitFor();
  await narrow.page.getByRole('region', { name: 'Usage this month' }).getByRole('list').waitFor();
  expect(await narrow.page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
  await narrow.page.screenshot({ path: screenshotPath('settings-billing-390'), fullPage: true });
  await narrow.context.close();
});

test('Billing: an API error shows its message and request id', async () => {
  const { context, page } = await signedIn(owner, 1280);
  const other = await stack.http.post('/users/@me/projects', { name: 'Second project' }, { cookie: owner.cookie });
  expect(other.status).toBe(201);
  // Stripe failing (the package retries once): the API answers 502 PAYMENT_PROVIDER_ERROR.
  stripeApi.failNext('/v1/customers', 3, 500);
  await page.goto(`${stack.api.url}/app/projects/${other.body.id}/settings`);
  const card = page.getByRole('region', { name: 'Billing' });
  await card.getByRole('button', { name: 'Upgrade' }).click();
  const alert = card.getByRole('alert');
  await alert.getByText('The checkout could not start').waitFor();
  await alert.getByText(/^Stripe could not create the customer/).waitFor();
  await alert.getByText('Request ID:').waitFor();
  expect(page.url()).toContain('/app/projects/');
  stripeApi.failNext('/v1/customers', 0);
  await context.close();
});

test('Billing: a member sees the subscription but no billing buttons', async () => {
  const { context, page } = await signedIn(member, 1280);
  await page.goto(`${stack.api.url}/app/projects/${project.id}/settings`);
  const card = page.getByRole('region', { name: 'Billing' });
  await card.getByText('Only the project’s owners and admins can manage billing.').waitFor();
  await card.getByText('Active', { exact: true }).waitFor();
  expect(await card.getByRole('button').count()).toBe(0);
  await expectAccessible(page);
  await context.close();
});
