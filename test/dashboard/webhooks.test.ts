import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium } from '../support/browser';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { startWebhookReceiver, type ReceivedRequest, type ReceiverHandler, type WebhookReceiver } from '../support/webhookReceiver';
import { signedWith } from '../support/webhookEndpoints';
import { eventually } from '../support/eventually';
import { ensureDashboardBuilt, screenshotPath, expectAccessible, overflowing } from '../support/dashboard';

// Issue 38, contracts 18 and 21: the Webhooks pages under Developers in Chromium, against the real
// stack (worker included: it delivers) and a real receiver. An endpoint made through the form (its
// secret shown once, on screen only), a test event seen in the log once the receiver got it, a
// receiver answering 500 (the message failed with its status code) then Retry, rotation, edit,
// disable and enable, a 410 disabling it with its reason, delete.

const screenshot = (name: string) => screenshotPath(`webhooks-${name}`);

let stack: TestStack;
let browser: Browser;
let receiver: WebhookReceiver;
let account: TestAccount;
let project: TestProject;

beforeAll(async () => {
  ensureDashboardBuilt();
  [stack, browser, receiver] = await Promise.all([
    // The receiver is on loopback; three attempts two seconds apart, so a failing message is FAILED within seconds.
    startTestStack({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_DELAYS_SECONDS: '2,2' } }),
    launchChromium(),
    startWebhookReceiver(),
  ]);
  ({ account, project } = await accountWithProject(stack.http));
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await stack?.stop();
});

const key = () => ({ key: project.secretKey });
/** The receiver's answer from now on: this status, no body. */
const answer =
  (status: number): ReceiverHandler =>
  (_req, res) =>
    res.writeHead(status).end();

/** A browser context signed in as the test account (its session cookie, as the log-in page would set it). */
async function signedIn(width: number): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url, httpOnly: true, sameSite: 'Lax' }]);
  return { context, page: await context.newPage() };
}

/** The requests the receiver got at `path`, once there are at least `count`. */
function arrived(path: string, count: number, timeoutMs = 20_000): Promise<ReceivedRequest[]> {
  return eventually(() => {
    const got = receiver.requests.filter((r) => r.path.split('?')[0] === path);
    if (got.length < count) throw new Error(`${got.length} of ${count} requests at ${path}`);
    return got;
  }, timeoutMs);
}

/** The log's message rows (each has its Retry button; an expanded message's attempts are a row of their own), newest first. */
function messageRows(page: Page): Locator {
  const log = page.getByRole('region', { name: 'Messages' }).first();
  return log.getByRole('row').filter({ has: page.getByRole('button', { name: /^Retry the / }) });
}

/** Waits until the newest message shows `status`, and answers its cells' texts. */
async function newestMessage(page: Page, status: string, timeoutMs = 30_000): Promise<string[]> {
  const row = messageRows(page).first();
  await row.getByRole('cell').nth(1).getByText(status, { exact: true }).waitFor({ timeout: timeoutMs });
  return row.getByRole('cell').allTextContents();
}

/** Everything the page's origin keeps in the browser: storage, cookies it can read, IndexedDB's databases. */
async function browserStorage(page: Page): Promise<string> {
  return page.evaluate<string>(
    `indexedDB.databases().then((dbs) => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, indexedDb: dbs.map((db) => db.name) }))`,
  );
}

test('webhooks: create (secret once), test event, 500 then Retry, rotate, edit, disable and enable, 410 with its reason, delete', async () => {
  const hookPath = '/hooks/orders';
  const { context, page } = await signedIn(1280);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.api.url });
  // Every request the dashboard sends from now on, to show the secret never leaves the screen.
  const sent: string[] = [];
  page.on('request', (request) => sent.push(`${request.url()} ${JSON.stringify(request.headers())} ${request.postData() ?? ''}`));

  // From the Developers page to Webhooks: empty at first.
  await page.goto(`${stack.api.url}/app/projects/${project.id}/developers`);
  const card = page.getByRole('region', { name: 'Webhooks' });
  await card.getByText('No endpoints yet.', { exact: false }).waitFor();
  await card.getByRole('link', { name: 'Manage webhooks' }).click();
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/app/projects/${project.id}/developers/webhooks`);
  await page.getByText('No endpoints yet.', { exact: false }).waitFor();
  await expectAccessible(page);

  // The form, checked in the browser with the API's own schema (shared/webhookEndpointSchemas.ts).
  await page.getByRole('button', { name: 'New endpoint' }).click();
  const form = page.getByRole('region', { name: 'New endpoint' });
  await form.getByRole('textbox', { name: 'URL' }).fill('ftp://example.com/hook');
  await form.getByRole('button', { name: 'Create endpoint' }).click();
  await form.getByText('url must start with https:// or http://').waitFor();
  await form.getByText('events needs at least one pattern', { exact: false }).waitFor();
  expect(await form.getByRole('textbox', { name: 'URL' }).getAttribute('aria-invalid')).toBe('true');
  await expectAccessible(page);
  // The API's refusal (a cloud metadata host, whatever WEBHOOK_ALLOW_PRIVATE says): its 422 on the URL field.
  await form.getByRole('textbox', { name: 'URL' }).fill('http://metadata.google.internal/hook');
  await form.getByRole('textbox', { name: 'Events' }).fill('email.*');
  // Suggestions add a pattern on a line of its own.
  await form.getByRole('button', { name: 'Add contact.*' }).waitFor();
  await form.getByText('Events Mailroom records').click();
  await form.getByRole('button', { name: 'Add contact.unsubscribed' }).click();
  expect(await form.getByRole('textbox', { name: 'Events' }).inputValue()).toBe('email.*\ncontact.unsubscribed');
  await form.getByRole('textbox', { name: 'Description' }).fill('Orders service');
  await form.getByRole('button', { name: 'Create endpoint' }).click();
  const urlField = form.locator('.field').filter({ has: page.getByRole('textbox', { name: 'URL' }) });
  await urlField.getByText('cloud metadata service', { exact: false }).waitFor();
  await form
    .getByRole('alert')
    .getByText(/Request ID: \S+/)
    .waitFor();

  await form.getByRole('textbox', { name: 'URL' }).fill(`${receiver.url}${hookPath}`);
  await form.getByRole('button', { name: 'Create endpoint' }).click();
  const created = page.getByRole('region', { name: 'Endpoint created: Orders service' });
  await created.getByText('It will not be shown again', { exact: false }).waitFor();
  const secret = (await created.getByText(/^whsec_[A-Za-z0-9+/=]+$/).textContent())!;
  await created.getByRole('button', { name: 'Copy signing secret' }).click();
  await created.getByRole('status').getByText('Copied').waitFor();
  expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);
  await page
    .getByRole('region', { name: 'Endpoints' })
    .first()
    .getByRole('link', { name: `${receiver.url}${hookPath}` })
    .waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('created-1280'), fullPage: true });

  // The secret stays on screen only: not in the browser's storage, not in any request, not in the API's answers since.
  expect(await browserStorage(page)).not.toContain(secret);
  const listed = await stack.http.get('/webhook-endpoints', key());
  expect(listed.status).toBe(200);
  expect(listed.body.data).toHaveLength(1);
  const endpoint = listed.body.data[0];
  expect(endpoint).toMatchObject({
    url: `${receiver.url}${hookPath}`,
    events: ['email.*', 'contact.unsubscribed'],
    description: 'Orders service',
    enabled: true,
  });
  expect(endpoint).not.toHaveProperty('secret');
  expect(endpoint.secretHint).toBe(`whsec_…${secret.slice(-4)}`);
  // Gone after a reload: shown once.
  await page.reload();
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  const row = page.getByRole('region', { name: 'Endpoints' }).first().getByRole('row').filter({ hasText: 'Orders service' });
  await row.waitFor();
  expect(await row.getByRole('cell').allTextContents()).toEqual([
    `${receiver.url}${hookPath}Orders service`,
    'email.*contact.unsubscribed',
    'Enabled',
    expect.any(String),
  ]);
  expect(await page.getByText(secret).count()).toBe(0);

  // An event of the project matching a pattern is in the log when the page opens.
  const contact = await stack.http.post('/contacts', { email: 'ada@example.com', subscribed: true }, key());
  expect((await stack.http.patch(`/contacts/${contact.body.id}`, { subscribed: false }, key())).status).toBe(200);
  const [unsubscribed] = await arrived(hookPath, 1);
  expect(JSON.parse(unsubscribed.body).type).toBe('contact.unsubscribed');
  expect(signedWith(unsubscribed, secret)).toBe(true);

  await row.getByRole('link', { name: `${receiver.url}${hookPath}` }).click();
  await page.getByRole('heading', { name: 'Orders service', level: 1 }).waitFor();
  expect(await newestMessage(page, 'Succeeded')).toEqual([
    'contact.unsubscribed',
    'Succeeded',
    '1',
    expect.stringMatching(/^HTTP 200 · \d+ ms$/),
    '—',
    expect.any(String),
    'Retry',
  ]);
  await page.getByText(endpoint.secretHint, { exact: true }).waitFor();
  await expectAccessible(page);

  // "Send test event": in the log as succeeded once the receiver got it.
  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.getByRole('status').getByText('Test event queued', { exact: false }).waitFor();
  const [, test] = await arrived(hookPath, 2);
  expect(JSON.parse(test.body).type).toBe('webhook.test');
  expect(signedWith(test, secret)).toBe(true);
  expect((await newestMessage(page, 'Succeeded'))[0]).toBe('webhook.test');

  // The receiver answers 500: retried, then failed, with the status code of each attempt.
  receiver.on(hookPath, answer(500));
  await page.getByRole('button', { name: 'Send test event' }).click();
  const failed = await newestMessage(page, 'Failed');
  expect(failed.slice(0, 4)).toEqual(['webhook.test', 'Failed', '3', expect.stringMatching(/^HTTP 500 · \d+ ms/)]);
  const failedRow = messageRows(page).first();
  await failedRow.getByRole('button', { name: /^3 attempts of the webhook.test message/ }).click();
  expect(await failedRow.getByRole('button', { name: /attempts of the/ }).getAttribute('aria-expanded')).toBe('true');
  const attempts = page.getByRole('table', { name: /^Attempts of the webhook.test message/ });
  await attempts.waitFor();
  const attemptRows = attempts.locator('tbody').getByRole('row');
  expect(await attemptRows.count()).toBe(3);
  for (const attemptRow of await attemptRows.all()) {
    expect((await attemptRow.getByRole('cell').allTextContents())[2]).toBe('500');
  }
  const failedRequests = await arrived(hookPath, 5);
  const failedId = failedRequests[4].headers['webhook-id'];
  expect(failedRequests.slice(2).map((r) => r.headers['webhook-id'])).toEqual([failedId, failedId, failedId]);
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('endpoint-1280'), fullPage: true });

  // The status filter.
  await page.getByRole('combobox', { name: 'Status' }).selectOption('FAILED');
  await eventually(async () => expect(await messageRows(page).count()).toBe(1));
  await page.getByRole('combobox', { name: 'Status' }).selectOption('');
  await eventually(async () => expect(await messageRows(page).count()).toBe(3));

  // Fixed: Retry sends it again now, with the same webhook-id.
  receiver.on(hookPath, answer(200));
  await messageRows(page)
    .first()
    .getByRole('button', { name: /^Retry the webhook.test message/ })
    .click();
  const retried = await newestMessage(page, 'Succeeded');
  expect(retried.slice(0, 4)).toEqual(['webhook.test', 'Succeeded', '4', expect.stringMatching(/^HTTP 200 · \d+ ms$/)]);
  const [retry] = (await arrived(hookPath, 6)).slice(5);
  expect(retry.headers['webhook-id']).toBe(failedId);

  // Rotate: the new secret shown once; for a day messages carry the old signature beside the new.
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const rotateDialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
  await expectAccessible(page);
  await rotateDialog.getByRole('button', { name: 'Rotate secret' }).click();
  const rotated = page.getByRole('region', { name: 'New signing secret' });
  const newSecret = (await rotated.getByText(/^whsec_[A-Za-z0-9+/=]+$/).textContent())!;
  expect(newSecret).not.toBe(secret);
  await page.getByText(`whsec_…${newSecret.slice(-4)}`, { exact: true }).waitFor();
  expect(await browserStorage(page)).not.toContain(newSecret);
  // Sent at once, it may go out before the delivery run reads the endpoint again (every second):
  // the old secret signs it in any case. Both sign the last message below, sent by a fresh run.
  await page.getByRole('button', { name: 'Send test event' }).click();
  const [afterRotation] = (await arrived(hookPath, 7)).slice(6);
  expect(signedWith(afterRotation, secret)).toBe(true);

  // Edit: the same form, the same checks; the page names the endpoint by its new description.
  await page.getByRole('button', { name: 'Edit' }).click();
  const edit = page.getByRole('region', { name: 'Edit endpoint' });
  expect(await edit.getByRole('textbox', { name: 'Events' }).inputValue()).toBe('email.*\ncontact.unsubscribed');
  await edit.getByRole('textbox', { name: 'Events' }).fill('email*, contact.*');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await edit.getByText('"email*" is not an event name', { exact: false }).waitFor();
  await edit.getByRole('textbox', { name: 'Events' }).fill('email.*, contact.*');
  await edit.getByRole('textbox', { name: 'Description' }).fill('Orders service (EU)');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('heading', { name: 'Orders service (EU)', level: 1 }).waitFor();
  expect((await stack.http.get(`/webhook-endpoints/${endpoint.id}`, key())).body).toMatchObject({
    events: ['email.*', 'contact.*'],
    description: 'Orders service (EU)',
  });

  // Disable and enable: said in words, and a disabled endpoint gets no test event.
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  await page.getByText('This endpoint is disabled.').waitFor();
  expect(await page.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
  expect((await stack.http.get(`/webhook-endpoints/${endpoint.id}`, key())).body.enabled).toBe(false);
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
  expect(await page.getByText('This endpoint is disabled', { exact: false }).count()).toBe(0);
  expect((await stack.http.get(`/webhook-endpoints/${endpoint.id}`, key())).body.enabled).toBe(true);

  // 410 Gone disables it at once: the page shows it and why, without a reload; enabling sends what is pending.
  receiver.on(hookPath, answer(410));
  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.getByText('This endpoint is disabled: The endpoint answered 410 Gone.').waitFor({ timeout: 20_000 });
  const gone = await newestMessage(page, 'Pending');
  expect(gone[3]).toMatch(/^HTTP 410 · \d+ ms/);
  await page.getByRole('status').getByText('Messages pending', { exact: false }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('endpoint-disabled-1280'), fullPage: true });
  receiver.on(hookPath, answer(200));
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  expect((await newestMessage(page, 'Succeeded')).slice(0, 3)).toEqual(['webhook.test', 'Succeeded', '2']);
  // The 410 stopped the delivery run; enabling started a new one, which signs with both secrets.
  const [lastRequest] = (await arrived(hookPath, 9)).slice(8);
  expect(signedWith(lastRequest, newSecret)).toBe(true);
  expect(signedWith(lastRequest, secret)).toBe(true);
  expect(String(lastRequest.headers['webhook-signature']).split(' ')).toHaveLength(2);

  // Nothing the dashboard sent carried either secret.
  expect(sent.filter((line) => line.includes(secret) || line.includes(newSecret))).toEqual([]);

  // Delete, after a confirmation: back on the list, and gone from the API.
  await page.getByRole('button', { name: 'Delete endpoint' }).click();
  await page.getByRole('dialog', { name: 'Delete Orders service (EU)?' }).getByRole('button', { name: 'Delete endpoint' }).click();
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.getByText('No endpoints yet.', { exact: false }).waitFor();
  expect((await stack.http.get(`/webhook-endpoints/${endpoint.id}`, key())).status).toBe(404);
  await context.close();
}, 180_000);

test('webhooks at 390 px: the list and an endpoint with its log fit, and pass axe', async () => {
  const hookPath = '/hooks/narrow';
  receiver.on(hookPath, answer(200));
  const made = await stack.http.post(
    '/webhook-endpoints',
    { url: `${receiver.url}${hookPath}?source=mailroom&region=eu-west-1`, events: ['*'], description: 'Analytics pipeline' },
    key(),
  );
  expect(made.status).toBe(201);
  const id: string = made.body.id;
  expect((await stack.http.post(`/webhook-endpoints/${id}/test`, undefined, key())).status).toBe(202);
  await arrived(hookPath, 1);

  const { context, page } = await signedIn(390);
  await page.goto(`${stack.api.url}/app/projects/${project.id}/developers/webhooks`);
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.getByRole('link', { name: `${receiver.url}${hookPath}?source=mailroom&region=eu-west-1` }).waitFor();
  expect(await overflowing(page)).toEqual([]);
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-390'), fullPage: true });

  await page.goto(`${stack.api.url}/app/projects/${project.id}/developers/webhooks/${id}`);
  await page.getByRole('heading', { name: 'Analytics pipeline', level: 1 }).waitFor();
  await newestMessage(page, 'Succeeded');
  await messageRows(page)
    .first()
    .getByRole('button', { name: /^1 attempt of the webhook.test message/ })
    .click();
  await page.getByRole('table', { name: /^Attempts of the webhook.test message/ }).waitFor();
  expect(await overflowing(page)).toEqual([]);
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('endpoint-390'), fullPage: true });

  // The form at 390 px.
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByRole('region', { name: 'Edit endpoint' }).getByRole('textbox', { name: 'URL' }).waitFor();
  expect(await overflowing(page)).toEqual([]);
  await expectAccessible(page);
  await context.close();
}, 90_000);
