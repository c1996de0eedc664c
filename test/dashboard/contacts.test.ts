import type { Browser } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';
import { accountWithProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// The dashboard's Contacts pages (issue 37, contract 21) in Chromium against the real stack, worker
// included (imports and bulk jobs are Temporal workflows): the list with search and filters, a new
// contact, one contact's page with its events and emails as one timeline, edit, a CSV import with
// its column preview and live progress, a bulk unsubscribe of selected rows (followed again after a reload), delete.

const screenshot = (name: string) => screenshotPath(`contacts-${name}`);

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

test('contacts: create, search, one contact’s timeline, edit, import a CSV live, bulk unsubscribe, delete', async () => {
  const { account, project } = await accountWithProject(stack.http);
  const key = { key: project.secretKey };

  // Ada has one tracked event and one email, so her timeline holds one of each.
  expect(
    (await stack.http.post('/v1/track', { email: 'ada@example.com', event: 'signed-up', data: { firstName: 'Ada', plan: 'free' } }, { key: project.publicKey }))
      .status,
  ).toBe(200);
  const sent = await stack.http.post(
    '/v1/send',
    { from: `hello@${OUTBOX_SENDER_DOMAIN}`, to: 'ada@example.com', subject: 'Welcome aboard, Ada', body: '<p>Hi Ada</p>' },
    key,
  );
  expect(sent.status).toBe(200);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url }]);
  const page = await context.newPage();
  const requested = recordRequests(page);
  const base = `${stack.api.url}/app/projects/${project.id}/contacts`;

  // The list, reached by the navigation's "Contacts" link.
  await page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Contacts' }).click();
  await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
  await page.getByRole('link', { name: 'ada@example.com' }).waitFor();
  await expectAccessible(page);

  // A new contact with a data field.
  await page.getByRole('link', { name: 'New contact' }).click();
  await page.getByRole('heading', { name: 'New contact', level: 1 }).waitFor();
  await page.getByLabel('Email').fill('not-an-address');
  await page.getByRole('button', { name: 'Create contact' }).click();
  await page.getByText('Invalid email address').waitFor();
  await page.getByLabel('Email').fill('grace@example.com');
  await page.getByRole('textbox', { name: 'Key 1' }).fill('firstName');
  await page.getByRole('textbox', { name: 'Value 1' }).fill('Grace');
  await page.getByRole('button', { name: 'Add field' }).click();
  await page.getByRole('textbox', { name: 'Key 2' }).fill('seats');
  await page.getByRole('textbox', { name: 'Value 2' }).fill('12');
  await page.getByRole('combobox', { name: 'Type 2' }).selectOption('number');
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('new-1280'), fullPage: true });
  await page.getByRole('button', { name: 'Create contact' }).click();
  await page.getByRole('heading', { name: 'grace@example.com', level: 1 }).waitFor();
  await page.getByRole('status').getByText('Contact created.').waitFor();
  const grace = await stack.http.post('/contacts/lookup', { emails: ['grace@example.com'] }, key);
  const graceId: string = grace.body.found[0].id;
  expect((await stack.http.get(`/contacts/${graceId}`, key)).body.data).toEqual({ firstName: 'Grace', seats: 12 });

  // Search: a part of the address, as a searchbox.
  await page.getByRole('link', { name: 'Contacts' }).first().click();
  await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
  await page.getByRole('searchbox').fill('grace');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('link', { name: 'grace@example.com' }).waitFor();
  await eventually(async () => expect(await page.getByRole('link', { name: 'ada@example.com' }).count()).toBe(0));
  await page.getByRole('searchbox').fill('nobody-here');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No contact matches these filters.').waitFor();
  await page.getByRole('searchbox').fill('');
  await page.getByRole('button', { name: 'Search' }).click();

  // Ada's page: her data, and her event and email as one timeline, newest first.
  await page.getByRole('link', { name: 'ada@example.com' }).click();
  await page.getByRole('heading', { name: 'ada@example.com', level: 1 }).waitFor();
  const timeline = page.getByRole('region', { name: 'Timeline' });
  await timeline.getByText('signed-up', { exact: true }).waitFor();
  await timeline.getByRole('link', { name: 'Welcome aboard, Ada' }).waitFor();
  const entries = await timeline.getByRole('listitem').allTextContents();
  expect(entries.findIndex((text) => text.includes('Welcome aboard, Ada'))).toBeLessThan(entries.findIndex((text) => text.includes('signed-up')));
  await page.getByRole('region', { name: 'Data' }).getByText('free').waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('contact-1280'), fullPage: true });

  // Edit: unsubscribe her and change her plan; the timeline gains the unsubscription.
  await page.getByRole('button', { name: 'Edit contact' }).click();
  await page.getByRole('checkbox', { name: 'Subscribed' }).uncheck();
  const keys = page.getByRole('textbox', { name: /^Key \d+$/ });
  let planRow = -1;
  for (let i = 0; i < (await keys.count()); i++) if ((await keys.nth(i).inputValue()) === 'plan') planRow = i;
  expect(planRow).toBeGreaterThanOrEqual(0);
  await page.getByRole('textbox', { name: `Value ${planRow + 1}` }).fill('pro');
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Save contact' }).click();
  await page.getByRole('status').getByText('Saved.').waitFor();
  await page.getByRole('region', { name: 'Data' }).getByText('pro').waitFor();
  await timeline.getByText('contact.unsubscribed', { exact: true }).waitFor();
  const ada = (await stack.http.post('/contacts/lookup', { emails: ['ada@example.com'] }, key)).body.found[0];
  expect(ada.subscribed).toBe(false);
  expect((await stack.http.get(`/contacts/${ada.id}`, key)).body.data).toEqual({ firstName: 'Ada', plan: 'pro' });

  // Import: the column preview, then the job live until it finishes, with its counts and errors.
  await page.goto(`${base}/import`);
  await page.getByRole('heading', { name: 'Import contacts', level: 1 }).waitFor();
  const csv = [
    'Email,subscribed,company,seats,id',
    ...Array.from({ length: 30 }, (_, i) => `person${i}@example.com,yes,Acme ${i},${i + 1},${i}`),
    'not-an-address,yes,Broken,1,99',
  ].join('\n');
  await page.getByLabel('CSV file').setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  const columns = page.getByRole('table');
  await columns.getByRole('row', { name: /^Email\s+Email/ }).waitFor();
  await columns.getByRole('row', { name: /company\s+Data field company/ }).waitFor();
  await columns.getByRole('row', { name: /seats\s+Data field seats \(Number\)/ }).waitFor();
  await columns.getByRole('row', { name: /id\s+Not imported/ }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('import-preview-1280'), fullPage: true });
  await page.getByRole('button', { name: 'Import' }).click();
  await page.getByRole('progressbar', { name: 'Import: progress' }).waitFor();
  await page.getByRole('status').getByText('Finished: 30 imported, 1 failed.').waitFor({ timeout: 30_000 });
  expect(await page.getByRole('progressbar', { name: 'Import: progress' }).getAttribute('value')).toBe('31');
  await page.getByRole('table').getByText('Invalid email address').waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('import-done-1280'), fullPage: true });

  // Bulk unsubscribe of selected rows, followed live; the list then shows them unsubscribed.
  await page.getByRole('link', { name: 'Open contacts' }).click();
  await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
  await page.getByRole('status').getByText('32 contacts').waitFor();
  await page.getByRole('checkbox', { name: 'Select person1@example.com' }).check();
  await page.getByRole('checkbox', { name: 'Select person2@example.com' }).check();
  await page.getByRole('status').getByText('2 selected').waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-selected-1280'), fullPage: true });
  await page.getByRole('button', { name: 'Unsubscribe' }).click();
  await page.getByRole('progressbar', { name: /Unsubscribing 2 contacts/ }).waitFor();
  // The job is in the address (?bulkJob=), so a reload follows it again, to its end.
  const bulkJobId = new URL(page.url()).searchParams.get('bulkJob');
  expect(bulkJobId).toMatch(/\S/);
  await page.reload();
  expect(new URL(page.url()).searchParams.get('bulkJob')).toBe(bulkJobId);
  await page.getByRole('progressbar', { name: /Unsubscribing 2 contacts/ }).waitFor();
  await page.getByRole('status').getByText('Finished: 2 unsubscribed.').waitFor({ timeout: 30_000 });
  await page.getByRole('combobox', { name: 'Subscribed' }).selectOption('false');
  const unsubscribed = page.getByRole('table');
  await unsubscribed.getByRole('link', { name: 'person2@example.com' }).waitFor();
  await eventually(async () =>
    expect((await unsubscribed.getByRole('link').allTextContents()).sort()).toEqual(['ada@example.com', 'person1@example.com', 'person2@example.com']),
  );
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-1280'), fullPage: true });
  await page.getByRole('button', { name: 'Dismiss' }).click();
  await eventually(async () => expect(new URL(page.url()).searchParams.get('bulkJob')).toBeNull());
  expect(new URL(page.url()).searchParams.get('subscribed')).toBe('false');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('combobox', { name: 'Subscribed' }).selectOption('');
  await page.getByRole('link', { name: 'person29@example.com' }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-390'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });

  // Delete, after a confirmation that names the consequence.
  await page.goto(`${base}/${graceId}`);
  await page.getByRole('heading', { name: 'grace@example.com', level: 1 }).waitFor();
  await page.getByRole('region', { name: 'Data' }).getByText('Grace').waitFor();
  await page.getByText('Loading the timeline…').waitFor({ state: 'detached' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: screenshot('contact-390'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.getByRole('button', { name: 'Delete contact' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete grace@example.com?' });
  await dialog.getByText('cannot be undone').waitFor();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Delete contact' }).click();
  await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
  await page.getByRole('status').getByText('31 contacts').waitFor();
  expect((await stack.http.get(`/contacts/${graceId}`, key)).status).toBe(404);

  const origin = new URL(stack.api.url).origin;
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  await context.close();
}, 120_000);
