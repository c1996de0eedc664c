import type { Browser } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';
import { accountWithProject } from '../support/accounts';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// The dashboard's Segments pages (issue 37, contract 21) in Chromium against the real stack, worker
// included (tracked segments are kept current off the request path): a static segment with members
// added and removed, a dynamic one with its condition as text and its member count, the API's
// field errors for a bad condition, a tracked one computed, delete with a confirmation.

const screenshot = (name: string) => screenshotPath(`segments-${name}`);

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  [stack, browser] = await Promise.all([startTestStack({ worker: true }), launchChromium()]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

test('segments: a static one with members added and removed, a dynamic one’s condition and count, a tracked one computed, delete', async () => {
  const { account, project } = await accountWithProject(stack.http);
  const key = { key: project.secretKey };
  for (const [email, plan] of [
    ['ada@example.com', 'pro'],
    ['grace@example.com', 'pro'],
    ['linus@example.com', 'free'],
  ]) {
    expect((await stack.http.post('/contacts', { email, data: { plan } }, key)).status).toBeLessThan(300);
  }

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url }]);
  const page = await context.newPage();
  const requested = recordRequests(page);

  // The list, reached by the navigation's "Segments" link: empty at first.
  await page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Segments' }).click();
  await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
  await page.getByText('No segments yet').waitFor();
  await expectAccessible(page);

  // A static segment; members added by email (one is no contact), then one removed.
  await page.getByRole('button', { name: 'New segment' }).click();
  await page.getByRole('textbox', { name: 'Name' }).fill('Beta testers');
  await page.getByRole('combobox', { name: 'Type' }).selectOption('STATIC');
  await expect(page.getByRole('textbox', { name: 'Condition' }).count()).resolves.toBe(0);
  await page.getByRole('button', { name: 'Create segment' }).click();
  await page.getByRole('heading', { name: 'Beta testers', level: 1 }).waitFor();
  await page.getByText('No members yet').waitFor();
  await page.getByRole('textbox', { name: 'Emails' }).fill('ada@example.com, grace@example.com\nnobody@example.com');
  await page.getByRole('button', { name: 'Add members' }).click();
  await page.getByRole('status').getByText('Added 2. Not contacts (not added): nobody@example.com.').waitFor();
  const members = page.getByRole('table');
  await members.getByRole('link', { name: 'ada@example.com' }).waitFor();
  await members.getByRole('link', { name: 'grace@example.com' }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('static-1280'), fullPage: true });
  await page.getByRole('button', { name: 'Remove ada@example.com' }).click();
  await members.getByRole('link', { name: 'ada@example.com' }).waitFor({ state: 'detached' });
  await page.getByRole('definition').filter({ hasText: /^1$/ }).waitFor();

  // A dynamic segment: a bad condition shows the API's field errors, a good one is shown as text.
  await page.getByRole('link', { name: 'Segments' }).first().click();
  await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'New segment' }).click();
  await page.getByRole('textbox', { name: 'Name' }).fill('Pro plan');
  const condition = page.getByRole('textbox', { name: 'Condition' });
  await condition.fill('{ "logic": "AND", ');
  await page.getByRole('button', { name: 'Create segment' }).click();
  await page.getByText(/The condition is not valid JSON/).waitFor();
  await condition.fill(JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'sameAs', value: 'pro' }] }] }));
  await page.getByRole('button', { name: 'Create segment' }).click();
  await page.locator('.seg-errors').getByText('condition.groups.0.filters.0.operator').waitFor();
  expect(await page.getByRole('alert').textContent()).toMatch(/Request ID: \S+/);
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('new-invalid-1280'), fullPage: true });
  const pro = {
    logic: 'OR',
    groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }, { filters: [{ field: 'email', operator: 'contains', value: 'linus' }] }],
  };
  await condition.fill(JSON.stringify(pro, null, 2));
  await page.getByRole('checkbox', { name: /Track membership/ }).check();
  await page.getByRole('button', { name: 'Create segment' }).click();
  await page.getByRole('heading', { name: 'Pro plan', level: 1 }).waitFor();
  await page.getByText('data.plan is "pro"').waitFor();
  expect(await page.locator('.seg-condition').textContent()).toBe('data.plan is "pro"\nOR email contains "linus"');
  await page.getByText('Tracked membership', { exact: true }).first().waitFor();

  // Its members match now; Compute brings the tracked membership (and the count) up to date.
  const dynamicMembers = page.getByRole('table');
  for (const email of ['ada@example.com', 'grace@example.com', 'linus@example.com']) await dynamicMembers.getByRole('link', { name: email }).waitFor();
  await page.getByRole('button', { name: 'Compute' }).click();
  await page
    .getByRole('status')
    .getByText(/^Computed: \d+ added, 0 removed, 3 members now\.$/)
    .waitFor();
  await page.getByRole('definition').filter({ hasText: /^3$/ }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('dynamic-1280'), fullPage: true });

  // The list: both, with type, tracking and counts; a refresh recounts.
  await page.getByRole('link', { name: 'Segments' }).first().click();
  const list = page.getByRole('table');
  const proRow = list.getByRole('row').filter({ hasText: 'Pro plan' });
  await proRow.getByText('Dynamic').waitFor();
  await proRow.getByText('Yes').waitFor();
  await list.getByRole('row').filter({ hasText: 'Beta testers' }).getByText('Static').waitFor();
  expect((await stack.http.post('/contacts', { email: 'new-pro@example.com', data: { plan: 'pro' } }, key)).status).toBeLessThan(300);
  await page.getByRole('button', { name: 'Refresh the member count of Pro plan' }).click();
  await proRow.locator('.seg-count').getByText('4').waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-1280'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: screenshot('list-390'), fullPage: true });
  await page.getByRole('link', { name: 'Pro plan' }).click();
  await page.getByRole('heading', { name: 'Pro plan', level: 1 }).waitFor();
  await page.screenshot({ path: screenshot('dynamic-390'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });

  // Delete, after a confirmation naming the consequence.
  await page.getByRole('button', { name: 'Delete segment' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete Pro plan?' });
  await dialog.getByText('its contacts are not').waitFor();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Delete segment' }).click();
  await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
  await list.getByRole('link', { name: 'Beta testers' }).waitFor();
  await list.getByRole('link', { name: 'Pro plan' }).waitFor({ state: 'detached' });
  expect((await stack.http.get('/segments', key)).body.map((s: { name: string }) => s.name)).toEqual(['Beta testers']);

  const origin = new URL(stack.api.url).origin;
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  await context.close();
}, 180_000);
