import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium } from '../support/browser';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// Issue 37: the Overview's last 30 days as a daily chart of sends, opens, clicks and bounces
// (GET /analytics/timeseries), a figure named by its caption whose numbers are also a table.

let stack: TestStack;
let browser: Browser;
let account: TestAccount;
let project: TestProject;

beforeAll(async () => {
  ensureDashboardBuilt();
  // The worker delivers the email, so the analytics rollups count it.
  [stack, browser] = await Promise.all([startTestStack({ worker: true }), launchChromium()]);
  ({ account, project } = await accountWithProject(stack.http));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

async function signedIn(width: number): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url, httpOnly: true, sameSite: 'Lax' }]);
  return { context, page: await context.newPage() };
}

test('Overview: no email yet, then a sent one in the daily chart and its table, with no serious axe violation', async () => {
  const { context, page } = await signedIn(1280);
  await page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  await page.getByText('No email in the last 30 days.').waitFor();
  await expectAccessible(page);

  const sent = await stack.http.post(
    '/v1/send',
    { from: `hello@${OUTBOX_SENDER_DOMAIN}`, to: 'ada@example.com', subject: 'Counted in the chart', body: '<p>Hi</p>' },
    { key: project.secretKey },
  );
  expect(sent.status).toBe(200);
  await eventually(async () => {
    const res = await stack.http.get('/analytics/timeseries?granularity=day', { key: project.secretKey });
    return res.body.points.some((point: { sent: number }) => point.sent === 1);
  }, 60_000);

  await page.reload();
  const figure = page.getByRole('figure', { name: 'Emails per day, last 30 days' });
  await figure.waitFor();
  const table = figure.getByRole('table', { name: /Emails per day/ });
  for (const name of ['Day', 'Sent', 'Opened', 'Clicked', 'Bounced'])
    await table.getByRole('columnheader', { name, exact: true }).waitFor({ state: 'attached' });
  // One day sent 1; every other cell of the 31 days is 0.
  const cells = await table.getByRole('cell').allTextContents();
  expect(cells.filter((cell) => cell !== '0')).toEqual(['1']);
  expect(await table.getByRole('row').count()).toBeGreaterThanOrEqual(31);
  // The lazily loaded Recharts chart, and its legend naming each line.
  await figure.locator('.recharts-line').first().waitFor({ state: 'attached' });
  expect(await figure.locator('.recharts-line').count()).toBe(4);
  expect(await figure.locator('.overview-chart-legend li').allTextContents()).toEqual(['Sent', 'Opened', 'Clicked', 'Bounced']);
  await expectAccessible(page);
  await figure.scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshotPath('overview-chart-1280'), fullPage: true });
  await context.close();

  const narrow = await signedIn(390);
  await narrow.page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await narrow.page.getByRole('figure', { name: 'Emails per day, last 30 days' }).locator('.recharts-line').first().waitFor({ state: 'attached' });
  await narrow.page.screenshot({ path: screenshotPath('overview-chart-390'), fullPage: true });
  // The chart and its hidden table fit a phone's width: no sideways scrolling.
  expect(await narrow.page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
  await narrow.context.close();
}, 120_000);
