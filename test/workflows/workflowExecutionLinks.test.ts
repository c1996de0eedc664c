import { startTestStack, testEnv, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { loadConfig } from '../../lib/config';

// What the dashboard's Workflows pages need of the API (issue 37): each workflow's executions by
// status (in the list and on their own), each execution's Temporal workflow id, and where the
// Temporal UI is (GET /config), so an execution links to its run there.

let stack: TestStack;
let project: TestProject;

beforeAll(async () => {
  // No worker: a started execution stays RUNNING, which is all these counts need.
  stack = await startTestStack({ worker: false, env: { TEMPORAL_UI_URL: 'http://temporal-ui.test:8233/' } });
  ({ project } = await accountWithProject(stack.http));
});

afterAll(async () => {
  await stack?.stop();
});

const as = (p: TestProject) => ({
  get: (path: string) => stack.http.get(path, { key: p.secretKey }),
  post: (path: string, body?: unknown) => stack.http.post(path, body, { key: p.secretKey }),
  del: (path: string) => stack.http.delete(path, { key: p.secretKey }),
});

const zero = { RUNNING: 0, WAITING: 0, COMPLETED: 0, EXITED: 0, FAILED: 0, CANCELLED: 0 };

/** TRIGGER → DELAY (an hour) → EXIT. */
async function delayWorkflow(name: string) {
  const created = await as(project).post('/workflows', { name, eventName: 'links.signed_up' });
  expect(created.status).toBe(201);
  const trigger = created.body.steps[0].id as string;
  const delay = await as(project).post(`/workflows/${created.body.id}/steps`, { type: 'DELAY', config: { amount: 1, unit: 'hours' } });
  const exit = await as(project).post(`/workflows/${created.body.id}/steps`, { type: 'EXIT', config: {} });
  await as(project).post(`/workflows/${created.body.id}/transitions`, { fromStepId: trigger, toStepId: delay.body.id });
  await as(project).post(`/workflows/${created.body.id}/transitions`, { fromStepId: delay.body.id, toStepId: exit.body.id });
  return created.body.id as string;
}

test('GET /config names the Temporal UI and namespace; null without TEMPORAL_UI_URL', async () => {
  const res = await stack.http.get('/config');
  expect(res.status).toBe(200);
  expect(res.body.temporalUi).toEqual({ url: 'http://temporal-ui.test:8233', namespace: 'default' });
  expect(loadConfig(testEnv()).temporalUiUrl).toBeNull();
  expect(() => loadConfig(testEnv({ TEMPORAL_UI_URL: 'not a url' }))).toThrow(/TEMPORAL_UI_URL/);
});

test('executions carry their Temporal workflow id; workflows count their executions by status, in the list and on their own', async () => {
  const workflowId = await delayWorkflow('Counted');
  const idle = await delayWorkflow('Idle');
  expect((await as(project).get(`/workflows/${workflowId}/executions/counts`)).body).toEqual(zero);

  const started = [];
  for (const email of ['ada@example.com', 'grace@example.com']) {
    expect((await as(project).post('/contacts', { email })).status).toBeLessThan(300);
    const res = await as(project).post(`/workflows/${workflowId}/executions`, { email });
    expect(res.status).toBe(201);
    expect(res.body.temporalWorkflowId).toBe(`execution-${res.body.id}`);
    expect(res.body.contactEmail).toBe(email);
    started.push(res.body.id as string);
  }
  const cancelled = await as(project).del(`/workflows/${workflowId}/executions/${started[0]}`);
  expect(cancelled.status).toBe(200);
  expect(cancelled.body.temporalWorkflowId).toBe(`execution-${started[0]}`);
  expect(cancelled.body.contactEmail).toBe('ada@example.com');

  const listed = await as(project).get(`/workflows/${workflowId}/executions`);
  expect(listed.body.data.map((e: { temporalWorkflowId: string }) => e.temporalWorkflowId).sort()).toEqual(started.map((id) => `execution-${id}`).sort());
  // Each listed execution names its contact's email (read with the page, a join).
  const byId = new Map(listed.body.data.map((e: { id: string; contactId: string; contactEmail: string | null }) => [e.id, e]));
  expect(byId.get(started[0])).toMatchObject({ contactEmail: 'ada@example.com', contactId: expect.any(String) });
  expect(byId.get(started[1])).toMatchObject({ contactEmail: 'grace@example.com' });
  const one = (await as(project).get(`/workflows/${workflowId}/executions/${started[1]}`)).body;
  expect(one.temporalWorkflowId).toBe(`execution-${started[1]}`);
  expect(one.contactEmail).toBe('grace@example.com');

  expect((await as(project).get(`/workflows/${workflowId}/executions/counts`)).body).toEqual({ ...zero, RUNNING: 1, CANCELLED: 1 });
  const list = await as(project).get('/workflows');
  const counts = Object.fromEntries(list.body.data.map((w: { id: string; executionCounts: unknown }) => [w.id, w.executionCounts]));
  expect(counts).toEqual({ [workflowId]: { ...zero, RUNNING: 1, CANCELLED: 1 }, [idle]: zero });
});

test('counts of an unknown or foreign workflow are a 404', async () => {
  const other = await accountWithProject(stack.http);
  const workflowId = await delayWorkflow('Mine');
  expect((await as(other.project).get(`/workflows/${workflowId}/executions/counts`)).status).toBe(404);
  expect((await as(project).get('/workflows/not-a-uuid/executions/counts')).status).toBe(404);
  expect((await stack.http.get(`/workflows/${workflowId}/executions/counts`)).status).toBe(401);
});
