import type { Browser, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';
import { accountWithProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// The dashboard's Templates pages (issue 37, contract 21) in Chromium against the real stack, worker
// included (a test email is delivered by a Temporal workflow into the local outbox): the list, a new
// template typed into the CodeMirror field named "Body" with its live preview (read inside the
// sandboxed frame) filled with a chosen contact's data, the variables listed, save, send a test and
// see it arrive, duplicate, delete; the preview carries no open pixel and no tracked link.

const screenshot = (name: string) => screenshotPath(`templates-${name}`);

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

const PREVIEW = 'iframe[title="Preview of the template"]';

/** Replaces the CodeMirror document the way a user does: focus the field named "Body", select all, type. */
async function typeBody(page: Page, text: string) {
  const body = page.getByRole('textbox', { name: 'Body' });
  await body.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

test('templates: create with a live preview for a chosen contact, the variables, save, send a test that arrives, duplicate, delete', async () => {
  const { account, project } = await accountWithProject(stack.http);
  const key = { key: project.secretKey };
  const contact = await stack.http.post('/contacts', { email: 'ada@example.com', data: { firstName: 'Ada', city: 'Paris' } }, key);
  expect(contact.status).toBe(201);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url }]);
  const page = await context.newPage();
  const requested = recordRequests(page);

  // The list, empty, reached by the navigation's "Templates" link.
  await page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Templates' }).click();
  await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
  await page.getByText('No templates yet.').waitFor();
  await expectAccessible(page);

  await page.getByRole('link', { name: 'New template' }).first().click();
  await page.getByRole('heading', { name: 'New template', level: 1 }).waitFor();
  // The starter body is previewed at once, its fallback filled in.
  const frame = page.frameLocator(PREVIEW);
  await frame.getByText('Hello there').waitFor();
  expect(await page.getByRole('textbox', { name: 'From', exact: true }).inputValue()).toBe(`hello@${OUTBOX_SENDER_DOMAIN}`);

  await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Welcome');
  await page.getByRole('textbox', { name: 'Subject', exact: true }).fill('Welcome, {{firstName ?? "friend"}}');
  await typeBody(page, '<html><body><p>Hello {{firstName ?? "friend"}} from {{city}}</p><a href="https://example.com/docs">Docs</a></body></html>');
  await frame.getByText('Hello friend from').waitFor();
  await page.getByText('Welcome, friend').waitFor();
  const variables = page.getByRole('list', { name: 'Variables' });
  await variables.getByText('city', { exact: true }).waitFor();
  expect(await variables.getByRole('listitem').allTextContents()).toEqual(['city', 'firstName']);

  // A body that does not compile: the API's reason, and the preview comes back once fixed.
  await typeBody(page, '<p>{{#if city}}open</p>');
  await page.getByRole('alert').getByText('The template does not render').waitFor();
  await typeBody(page, '<html><body><p>Hello {{firstName ?? "friend"}} from {{city}}</p><a href="https://example.com/docs">Docs</a></body></html>');
  await frame.getByText('Hello friend from').waitFor();

  // Filled with a chosen contact's data.
  await page.getByRole('searchbox', { name: 'Preview contact' }).fill('ada');
  await page.getByRole('button', { name: 'ada@example.com' }).click();
  await page.getByText('Previewing as').waitFor();
  await frame.getByText('Hello Ada from Paris').waitFor();
  await page.getByText('Welcome, Ada').waitFor();

  // Looking is not opening: the frame's HTML has no open pixel and no click redirect; links go to their targets.
  const previewHtml = (await page.locator(PREVIEW).getAttribute('srcdoc')) ?? '';
  expect(previewHtml).toContain('href="https://example.com/docs"');
  expect(previewHtml).not.toContain('/t/o/');
  expect(previewHtml).not.toContain('/t/c/');
  // The unsubscribe footer of MARKETING mail, as sent.
  expect(previewHtml).toContain('/unsubscribe/');
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('editor-1280'), fullPage: true });

  // Save: the template exists, and its page has its name.
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'Welcome', level: 1 }).waitFor();
  const templateId = /\/templates\/([0-9a-f-]{36})$/.exec(new URL(page.url()).pathname)?.[1];
  expect(templateId).toBeDefined();
  const saved = await stack.http.get(`/templates/${templateId}`, key);
  expect(saved.body).toMatchObject({ name: 'Welcome', subject: 'Welcome, {{firstName ?? "friend"}}', type: 'MARKETING' });
  expect(saved.body.body).toContain('from {{city}}');
  await page.getByRole('heading', { name: 'Where used' }).waitFor();
  await page.getByText('Not used by any workflow.').waitFor();
  await expectAccessible(page);

  // Send test: through the API's send path into the local outbox, with Ada's data.
  await page.getByRole('button', { name: 'Send test' }).click();
  const dialog = page.getByRole('dialog', { name: 'Send a test of Welcome' });
  await dialog.waitFor();
  expect(await dialog.getByRole('textbox', { name: 'Email' }).inputValue()).toBe(account.email);
  await expectAccessible(page);
  await dialog.getByRole('textbox', { name: 'Email' }).fill('ada@example.com');
  await dialog.getByRole('button', { name: 'Send test' }).click();
  await page.getByRole('status').getByText('Test email sent to ada@example.com').waitFor();
  const arrived = await eventually(async () => {
    const outbox = await stack.http.get('/outbox', key);
    const found = outbox.body.data.find((m: { subject: string }) => m.subject === '[TEST] Welcome, Ada');
    if (!found) throw new Error(`not in the outbox yet: ${JSON.stringify(outbox.body.data)}`);
    return found;
  }, 30_000);
  expect(arrived.to).toContain('ada@example.com');
  const raw = await stack.http.get(`/outbox/${arrived.id}/raw`, key);
  expect(raw.text).toContain('Hello Ada from Paris');

  // Where used: a workflow's Send email step names it, with a link to the workflow; deleting it is refused with the API's reason.
  const workflow = await stack.http.post('/workflows', { name: 'Onboarding', eventName: 'signed_up' }, key);
  expect(workflow.status).toBe(201);
  const step = await stack.http.post(`/workflows/${workflow.body.id}/steps`, { type: 'SEND_EMAIL', name: 'Welcome mail', config: { templateId } }, key);
  expect(step.status).toBe(201);
  await page.reload();
  const usage = page.getByRole('region', { name: 'Where used' }).first();
  await usage.getByRole('cell', { name: 'Welcome mail' }).waitFor();
  await usage.getByRole('link', { name: 'Onboarding' }).waitFor();
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog', { name: 'Delete Welcome?' }).getByRole('button', { name: 'Delete template' }).click();
  await page.getByRole('alert').getByText('used by workflow SEND_EMAIL steps').waitFor();
  await expectAccessible(page);
  await usage.getByRole('link', { name: 'Onboarding' }).click();
  await page.getByRole('heading', { name: 'Onboarding', level: 1 }).waitFor();
  await page.goBack();
  await page.getByRole('heading', { name: 'Welcome', level: 1 }).waitFor();

  // Duplicate: the copy opens; delete it with confirmation, back to the list.
  await page.getByRole('button', { name: 'Duplicate' }).click();
  await page.getByRole('heading', { name: 'Welcome (copy)', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Delete' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete Welcome (copy)?' });
  await confirm.waitFor();
  await confirm.getByRole('button', { name: 'Delete template' }).click();
  await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
  const table = page.getByRole('table');
  await table.getByRole('link', { name: 'Welcome' }).waitFor();
  expect(await table.getByRole('link').allTextContents()).toEqual(['Welcome']);
  await page.getByRole('searchbox', { name: 'Search' }).fill('nothing like it');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No template matches “nothing like it”.').waitFor();
  await page.getByRole('searchbox', { name: 'Search' }).fill('welc');
  await page.getByRole('button', { name: 'Search' }).click();
  await table.getByRole('link', { name: 'Welcome' }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-1280'), fullPage: true });

  // Nothing from another origin; the preview's link target was never fetched, and no tracking URL was.
  const origin = new URL(stack.api.url).origin;
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  expect(requested.filter((url) => /\/t\/[oc]\//.test(url))).toEqual([]);
  await context.close();

  // The editor at 390 px wide.
  const narrow = await browser.newContext({ viewport: { width: 390, height: 844 } });
  await narrow.addCookies([{ name, value, url: stack.api.url }]);
  const small = await narrow.newPage();
  await small.goto(`${stack.api.url}/app/projects/${project.id}/templates/${templateId}`);
  await small.getByRole('heading', { name: 'Welcome', level: 1 }).waitFor();
  await small.frameLocator(PREVIEW).getByText('Hello friend from').waitFor();
  await expectAccessible(small);
  const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
  expect(overflow).toBeLessThanOrEqual(0);
  // A full-page capture leaves the sandboxed (out-of-process) frame blank below the fold: the window is made as tall as the page instead.
  await small.setViewportSize({ width: 390, height: await small.evaluate<number>('document.documentElement.scrollHeight') });
  await small.frameLocator(PREVIEW).getByText('Hello friend from').waitFor();
  await small.screenshot({ path: screenshot('editor-390') });
  await narrow.close();
}, 180_000);

test('an unknown template shows the API’s error with its request id', async () => {
  const { account, project } = await accountWithProject(stack.http);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url }]);
  const page = await context.newPage();
  await page.goto(`${stack.api.url}/app/projects/${project.id}/templates/00000000-0000-4000-8000-000000000000`);
  const alert = page.getByRole('alert');
  await alert.getByText('Template not found').waitFor();
  expect(await alert.textContent()).toMatch(/Request ID: \S+/);
  await expectAccessible(page);
  await context.close();
}, 60_000);
