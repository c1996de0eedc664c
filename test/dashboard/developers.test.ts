import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium } from '../support/browser';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { deriveUserToken, userRepository } from '../../db/repositories/userRepository';
import { ensureDashboardBuilt, screenshotPath, expectAccessible, overflowing } from '../support/dashboard';

// Contract 21 and issue 37: the Developers page (keys, examples that work as shown, the SMTP relay's
// settings, the recent API requests with status and duration, the live stream of events), Settings'
// usage against the monthly caps, and the page the verification email links to.

const run = promisify(execFile);

let stack: TestStack;
let browser: Browser;
let account: TestAccount;
let project: TestProject;

beforeAll(async () => {
  ensureDashboardBuilt();
  // The SMTP relay listens (on a free port) so the page shows its settings.
  [stack, browser] = await Promise.all([startTestStack({ worker: false, smtpPorts: { submission: 0 } }), launchChromium()]);
  ({ account, project } = await accountWithProject(stack.http));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A browser context signed in as the test account (its session cookie, as the log-in page would set it). */
async function signedIn(width: number): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url, httpOnly: true, sameSite: 'Lax' }]);
  return { context, page: await context.newPage() };
}

/** Runs an example exactly as the page shows it, in a shell, with the secret key in the environment as the text says. */
async function runSnippet(code: string): Promise<any> {
  const { stdout } = await run('bash', ['-c', code], { env: { ...process.env, MAILROOM_SECRET_KEY: project.secretKey }, timeout: 20_000 });
  return JSON.parse(stdout);
}

test('Developers: keys, examples that work as shown, the SMTP relay, recent requests and live events without a reload', async () => {
  const { context, page } = await signedIn(1280);
  await page.goto(`${stack.api.url}/app/projects/${project.id}/developers`);
  await page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
  await page.getByText(project.publicKey, { exact: true }).first().waitFor();
  await page.getByRole('heading', { name: 'Recent API requests' }).waitFor();
  await page.getByText('No request with this project’s keys yet', { exact: false }).waitFor();
  // Marks this document: still there at the end means nothing was reloaded.
  await page.evaluate('window.__notReloaded = true');

  // The send and track examples in curl, run as shown.
  const send = page.getByRole('region', { name: 'Send an email' });
  const sendCurl = await send.getByRole('tabpanel').locator('code').textContent();
  expect(sendCurl).toContain(`${stack.api.url}/v1/send`);
  expect(sendCurl).toContain('$MAILROOM_SECRET_KEY');
  expect(sendCurl).not.toContain(project.secretKey);
  expect(await runSnippet(sendCurl!)).toMatchObject({ success: true });
  const track = page.getByRole('region', { name: 'Track an event' });
  const trackCurl = await track.getByRole('tabpanel').locator('code').textContent();
  expect(await runSnippet(trackCurl!)).toMatchObject({ success: true });
  // The Node.js tab: @plunk/node pointed at this instance's /v1/.
  await send.getByRole('tab', { name: 'Node.js' }).click();
  const node = await send.getByRole('tabpanel').locator('code').textContent();
  expect(node).toContain("import Plunk from '@plunk/node'");
  expect(node).toContain(`baseUrl: '${stack.api.url}/v1/'`);
  await send.getByRole('button', { name: 'Copy Node.js example' }).waitFor();

  // The SMTP relay's settings, from GET /config.
  const smtp = page.getByRole('region', { name: 'SMTP relay' });
  await smtp.getByText(String(stack.api.smtp.submission!.port), { exact: true }).waitFor();
  await smtp.getByText('A secret key of the project').waitFor();

  // Requests made with the secret key show with their status and duration, without a reload.
  const missing = crypto.randomUUID();
  expect((await stack.http.get('/contacts?limit=5', { key: project.secretKey })).status).toBe(200);
  expect((await stack.http.get(`/contacts/${missing}`, { key: project.secretKey })).status).toBe(404);
  const requests = page.getByRole('region', { name: 'Recent API requests' }).first().getByRole('table');
  const notFoundRow = requests.getByRole('row').filter({ hasText: `/contacts/${missing}` });
  await notFoundRow.waitFor({ timeout: 15_000 });
  expect(await notFoundRow.getByRole('cell').nth(2).textContent()).toBe('404');
  expect(await notFoundRow.getByRole('cell').nth(3).textContent()).toMatch(/^\d[\d.,]* ms$/);
  expect(await notFoundRow.getByRole('cell').nth(4).textContent()).toBe('Secret key');
  for (const expected of ['/v1/send', '/v1/track', '/contacts']) {
    await requests.getByRole('row').filter({ hasText: expected }).first().waitFor();
  }
  // The status filter: only the 4xx.
  await page.getByLabel('Status').selectOption('4xx');
  await requests.getByRole('row').filter({ hasText: '/v1/send' }).waitFor({ state: 'detached' });
  await notFoundRow.waitFor();
  expect(await requests.getByRole('row').count()).toBe(2); // the header and the 404
  await page.getByLabel('Status').selectOption('');

  // An event tracked now shows in the live stream without a reload.
  const events = page.getByRole('log', { name: 'Live events' });
  await events.getByText('signed-up').first().waitFor();
  const tracked = await stack.http.post('/v1/track', { email: 'grace@example.com', event: 'plan-upgraded', data: { plan: 'pro' } }, { key: project.publicKey });
  expect(tracked.status).toBe(200);
  await events.getByText('plan-upgraded').waitFor({ timeout: 10_000 });
  await events.getByText('grace@example.com').waitFor();
  expect(await page.evaluate('window.__notReloaded')).toBe(true);

  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('developers-overview-1280'), fullPage: true });
  await context.close();
}, 120_000);

test('Developers at 390 px: nothing overflows, every part reachable', async () => {
  const { context, page } = await signedIn(390);
  await page.goto(`${stack.api.url}/app/projects/${project.id}/developers`);
  await page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
  await page.getByRole('region', { name: 'Recent API requests' }).first().getByRole('table').waitFor();
  await page.getByRole('log', { name: 'Live events' }).getByText('plan-upgraded').waitFor();
  expect(await overflowing(page)).toEqual([]);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('developers-overview-390'), fullPage: true });
  await context.close();
}, 60_000);

test('Settings: this month’s usage against the caps, with progress bars; billing off says so; owners set the caps', async () => {
  const { context, page } = await signedIn(1280);
  await page.goto(`${stack.api.url}/app/projects/${project.id}/settings`);
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  const usage = page.getByRole('region', { name: 'Usage this month' });
  await usage.getByText('Billing is off on this instance').waitFor();
  // The send of the first test counts as transactional; no cap yet: no bar.
  await usage.getByRole('listitem').filter({ hasText: 'Transactional' }).getByText('emails · no cap').waitFor();
  expect(await usage.getByRole('progressbar').count()).toBe(0);

  await usage.getByLabel('Transactional').fill('1');
  await usage.getByLabel('Campaigns').fill('0');
  await usage.getByRole('button', { name: 'Set caps' }).click();
  // Checked in the browser with the API's own schema (shared/billingSchemas.ts).
  await usage.getByText('must be at least 1').waitFor();
  await usage.getByLabel('Campaigns').fill('5000');
  await usage.getByRole('button', { name: 'Set caps' }).click();
  await usage.getByRole('status').getByText('Caps set').waitFor();
  const bar = usage.getByRole('progressbar', { name: 'Transactional' });
  await bar.waitFor();
  expect(await bar.getAttribute('value')).toBe('1');
  expect(await bar.getAttribute('max')).toBe('1');
  expect(await usage.getByRole('listitem').filter({ hasText: 'Transactional' }).textContent()).toMatch(/1\s*of 1 emails/);
  await usage.getByRole('listitem').filter({ hasText: 'Transactional' }).getByText('Cap reached').waitFor();
  await usage.getByRole('progressbar', { name: 'Campaigns' }).waitFor();
  const limits = await stack.http.get(`/users/@me/projects/${project.id}/billing-limits`, { cookie: account.cookie });
  expect(limits.body.transactional).toMatchObject({ limit: 1, usage: 1, isWarning: true, isBlocked: true });
  expect(limits.body.campaigns.limit).toBe(5000);

  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('settings-usage-1280'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await overflowing(page)).toEqual([]);
  await page.screenshot({ path: screenshotPath('settings-usage-390'), fullPage: true });
  await context.close();
}, 60_000);

test('the verification email’s link: /app/verify-email verifies once, then says the link is spent', async () => {
  const tokenId = crypto.randomUUID();
  const issued = await userRepository.issueMailedToken(stack.orm.em.fork(), stack.config.secret, tokenId, account.email, 'VERIFY_EMAIL');
  expect(issued).toMatchObject({ issued: true });
  const token = deriveUserToken(stack.config.secret, tokenId);

  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await page.goto(`${stack.api.url}/app/verify-email?token=${encodeURIComponent(token)}`);
  await page.getByRole('heading', { name: 'Email verified', level: 1 }).waitFor();
  await page.getByRole('status').getByText(account.email).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('verify-email-390') });
  expect((await stack.http.get('/users/@me', { cookie: account.cookie })).body.emailVerified).toBe(true);

  // The link again: spent, and the page says so with the API's message and request id.
  await page.reload();
  await page.getByRole('heading', { name: 'Verification failed', level: 1 }).waitFor();
  const alert = page.getByRole('alert');
  await alert.getByText('invalid, expired or already used', { exact: false }).waitFor();
  expect(await alert.textContent()).toMatch(/Request ID: \S+/);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('verify-email-spent-390') });

  await page.goto(`${stack.api.url}/app/verify-email`);
  await page.getByText('This link has no verification token', { exact: false }).waitFor();
  await page.close();
}, 60_000);
