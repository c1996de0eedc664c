import type { Browser, Response } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium } from '../support/browser';
import { accountWithProject } from '../support/accounts';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { ensureDashboardBuilt } from '../support/dashboard';

// Contract 4: a dashboard session's calls (cookie + X-Project-Id) count against a budget of their
// own per user, never the project's, so open dashboards cannot starve the project's /v1/send.
// The project's budget here is 5 a minute: the dashboard alone makes more calls than that.

const PROJECT_BUDGET = 5;
const SESSION_BUDGET = 1200;

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  [stack, browser] = await Promise.all([
    startTestStack({ worker: false, env: { RATE_LIMIT_PER_MINUTE: String(PROJECT_BUDGET), SESSION_RATE_LIMIT_PER_MINUTE: String(SESSION_BUDGET) } }),
    launchChromium(),
  ]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

test('pages that load and poll the project’s data leave the project’s budget, and so /v1/send, whole', async () => {
  const { account, project } = await accountWithProject(stack.http);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url }]);
  const page = await context.newPage();

  // Every project-scoped call the dashboard makes, with the budget its answer names.
  const projectCalls: Array<{ url: string; status: number; limit: string | null }> = [];
  page.on('response', (response: Response) => {
    if (response.request().headers()['x-project-id'] !== project.id) return;
    projectCalls.push({ url: response.url(), status: response.status(), limit: response.headers()['ratelimit-limit'] ?? null });
  });

  await page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const [link, heading] of [
    ['Emails', 'Emails'],
    ['Activity', 'Activity'],
    ['Domains', 'Domains'],
    ['Developers', 'Developers'],
    ['Overview', 'Overview'],
  ]) {
    await nav.getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  }
  // One more poll of the Overview's activity feed, made by the page itself (every 15 s).
  const pollsBefore = projectCalls.filter((call) => new URL(call.url).pathname === '/activity').length;
  await page.waitForResponse((response) => new URL(response.url()).pathname === '/activity', { timeout: 30_000 });
  expect(projectCalls.filter((call) => new URL(call.url).pathname === '/activity').length).toBeGreaterThan(pollsBefore);

  // More calls than the project's budget, every one taken, each counted against the session's budget.
  expect(projectCalls.length).toBeGreaterThan(PROJECT_BUDGET);
  expect(projectCalls.filter((call) => call.status !== 200)).toEqual([]);
  expect(new Set(projectCalls.map((call) => call.limit))).toEqual(new Set([String(SESSION_BUDGET)]));

  // The project's whole budget is left for its key: /v1/send's first call sees all but itself.
  const sent = await stack.http.post(
    '/v1/send',
    { from: `hello@${OUTBOX_SENDER_DOMAIN}`, to: 'ada@example.com', subject: 'Budget intact', body: '<p>Hi</p>' },
    { key: project.secretKey },
  );
  expect(sent.status).toBe(200);
  expect(sent.headers.get('ratelimit-remaining')).toBe(String(PROJECT_BUDGET - 1));
  await context.close();
}, 120_000);
