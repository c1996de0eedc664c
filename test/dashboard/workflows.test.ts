import type { Browser } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';
import { accountWithProject, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// The dashboard's Workflows pages (issue 37, contract 21) in Chromium against the real stack, worker
// included (executions are Temporal workflows): a workflow made through the API enabled in the
// dashboard, an execution started by /v1/track seen live at its wait step, cancelled (through the
// API and Temporal) one and all, each linked to its run in the Temporal UI; a graph error shown
// when enabling a workflow that cannot run.

const screenshot = (name: string) => screenshotPath(`workflows-${name}`);

const TEMPORAL_UI = 'http://temporal-ui.test:8233';

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  [stack, browser] = await Promise.all([startTestStack({ worker: true, env: { TEMPORAL_UI_URL: TEMPORAL_UI } }), launchChromium()]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** TRIGGER → DELAY "Wait an hour" → EXIT "Done", through the API: an execution stays WAITING at the delay. */
async function waitingWorkflow(project: TestProject) {
  const key = { key: project.secretKey };
  const created = await stack.http.post('/workflows', { name: 'Trial nurture', description: 'Follows up on new trials', eventName: 'trial.started' }, key);
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const delay = await stack.http.post(`/workflows/${id}/steps`, { type: 'DELAY', name: 'Wait an hour', config: { amount: 1, unit: 'hours' } }, key);
  const exit = await stack.http.post(`/workflows/${id}/steps`, { type: 'EXIT', name: 'Done', config: { reason: 'nurtured' } }, key);
  expect((await stack.http.post(`/workflows/${id}/transitions`, { fromStepId: created.body.steps[0].id, toStepId: delay.body.id }, key)).status).toBe(201);
  expect((await stack.http.post(`/workflows/${id}/transitions`, { fromStepId: delay.body.id, toStepId: exit.body.id }, key)).status).toBe(201);
  return id;
}

test('workflows: enable one made through the API, see a tracked event’s execution live at its wait step, cancel one and all; a graph error when enabling', async () => {
  const { account, project } = await accountWithProject(stack.http);
  const key = { key: project.secretKey };
  const workflowId = await waitingWorkflow(project);
  // One that cannot run: a TRIGGER step and nothing after it.
  expect((await stack.http.post('/workflows', { name: 'Unfinished', eventName: 'never.sent' }, key)).status).toBe(201);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, value] = account.cookie.split('=');
  await context.addCookies([{ name, value, url: stack.api.url }]);
  const page = await context.newPage();
  const requested = recordRequests(page);

  // The list, reached by the navigation's "Workflows" link.
  await page.goto(`${stack.api.url}/app/projects/${project.id}`);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
  await page.getByRole('heading', { name: 'Workflows', level: 1 }).waitFor();
  const list = page.getByRole('table');
  const row = list.getByRole('row').filter({ hasText: 'Trial nurture' });
  await row.getByText('trial.started').waitFor();
  await row.getByText('Disabled').waitFor();
  await row.getByText('None yet').waitFor();
  await expectAccessible(page);

  // Enabling a workflow whose graph cannot run shows the API's graph errors.
  await list.getByRole('link', { name: 'Unfinished' }).click();
  await page.getByRole('heading', { name: 'Unfinished', level: 1 }).waitFor();
  await page.getByText('Only the trigger so far').waitFor();
  await page.getByRole('button', { name: 'Enable' }).click();
  await page.getByRole('alert').getByText('The workflow cannot be enabled').waitFor();
  expect(await page.getByRole('alert').textContent()).toMatch(/Request ID: \S+/);
  const graphErrors = page.getByRole('list', { name: 'Graph errors' });
  await graphErrors.getByRole('listitem').first().waitFor();
  expect(await graphErrors.textContent()).toMatch(/step/i);
  await page.getByText('Disabled', { exact: true }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('graph-error-1280'), fullPage: true });

  // The runnable one: its trigger and steps as a readable list; enabled from the dashboard.
  await page.goto(`${stack.api.url}/app/projects/${project.id}/workflows/${workflowId}`);
  await page.getByRole('heading', { name: 'Trial nurture', level: 1 }).waitFor();
  const steps = page.locator('.wf-steps');
  await steps.getByText('Starts when the event "trial.started" is tracked for a contact').waitFor();
  await steps.getByText('Waits 1 hour').waitFor();
  await steps.getByText('Ends the execution: nurtured').waitFor();
  expect(await steps.locator('.wf-step-title strong').allTextContents()).toEqual(['Trigger', 'Wait an hour', 'Done']);
  await page.getByText('No execution yet').waitFor();
  await page.getByRole('button', { name: 'Enable' }).click();
  await page.getByRole('button', { name: 'Disable' }).waitFor();
  await page.getByText('Enabled', { exact: true }).waitFor();
  expect((await stack.http.get(`/workflows/${workflowId}`, key)).body.enabled).toBe(true);

  // A tracked event starts an execution: it appears without a reload, waiting at "Wait an hour".
  expect((await stack.http.post('/v1/track', { email: 'ada@example.com', event: 'trial.started' }, { key: project.publicKey })).status).toBe(200);
  const executions = page.getByRole('table');
  const ada = executions.getByRole('row').filter({ hasText: 'Waiting' });
  await ada.getByText(/^Wait an hour \(waiting until .+\)$/).waitFor({ timeout: 30_000 });
  await page
    .getByRole('status')
    .getByText(/1 running or waiting; updated every 3 seconds/)
    .waitFor();
  const [execution] = (await stack.http.get(`/workflows/${workflowId}/executions`, key)).body.data as Array<{
    id: string;
    contactId: string;
    temporalWorkflowId: string;
  }>;
  // The Contact column shows the contact's email, linking to the contact's page.
  const contactLink = ada.getByRole('link', { name: 'ada@example.com' });
  expect(await contactLink.getAttribute('href')).toBe(`/app/projects/${project.id}/contacts/${execution.contactId}`);
  const runLink = ada.getByRole('link', { name: /Open in Temporal UI/ });
  expect(await runLink.getAttribute('href')).toBe(`${TEMPORAL_UI}/namespaces/default/workflows/${execution.temporalWorkflowId}`);
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('workflow-1280'), fullPage: true });

  // Cancel it, after a confirmation: cancelled in the dashboard, the API and Temporal.
  await ada.getByRole('button', { name: `Cancel execution ${execution.temporalWorkflowId}` }).click();
  const dialog = page.getByRole('dialog', { name: 'Cancel this execution?' });
  await dialog.getByText('It cannot be resumed').waitFor();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Cancel execution' }).click();
  await executions.getByRole('row').filter({ hasText: 'Cancelled' }).waitFor();
  await page.getByText('The execution was cancelled.').waitFor();
  expect((await stack.http.get(`/workflows/${workflowId}/executions/${execution.id}`, key)).body.status).toBe('CANCELLED');
  // Its Temporal run ends: the execution workflow handles the cancellation and closes (COMPLETED, not left RUNNING).
  await eventually(async () =>
    expect(['CANCELLED', 'COMPLETED']).toContain((await stack.temporal.workflow.getHandle(execution.temporalWorkflowId).describe()).status.name),
  );

  // Two more, then "Cancel all executions".
  for (const email of ['grace@example.com', 'linus@example.com']) {
    expect((await stack.http.post('/v1/track', { email, event: 'trial.started' }, { key: project.publicKey })).status).toBe(200);
  }
  await page
    .getByRole('status')
    .getByText(/2 running or waiting/)
    .waitFor({ timeout: 30_000 });
  await page.getByRole('combobox', { name: 'Status' }).selectOption('CANCELLED');
  await executions.getByRole('row').filter({ hasText: 'Waiting' }).first().waitFor({ state: 'detached' });
  expect(await executions.getByRole('row').count()).toBe(2);
  await page.getByRole('combobox', { name: 'Status' }).selectOption('');
  await page.getByRole('button', { name: 'Cancel all executions' }).click();
  await page.getByRole('dialog', { name: 'Cancel every running execution?' }).getByRole('button', { name: 'Cancel all executions' }).click();
  await page.getByText('2 executions cancelled.').waitFor();
  await page.getByRole('status').getByText('No execution is running.').waitFor();
  expect((await stack.http.get(`/workflows/${workflowId}/executions/counts`, key)).body).toMatchObject({ RUNNING: 0, WAITING: 0, CANCELLED: 3 });

  // The list counts them; 390 px wide too.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
  await row.getByText('3 cancelled').waitFor();
  await row.getByText('Enabled').waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('list-1280'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: screenshot('list-390'), fullPage: true });
  await list.getByRole('link', { name: 'Trial nurture' }).click();
  await page.getByRole('heading', { name: 'Trial nurture', level: 1 }).waitFor();
  await page.screenshot({ path: screenshot('workflow-390'), fullPage: true });

  const origin = new URL(stack.api.url).origin;
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  await context.close();
}, 180_000);
