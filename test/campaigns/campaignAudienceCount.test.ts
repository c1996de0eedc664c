import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';

/** POST /campaigns/audience/count: the recipients a send would fix now, for a composer to show live. */
let stack: TestStack;
let project: TestProject;

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  ({ project } = await accountWithProject(stack.http));
  for (const [email, subscribed, plan] of [
    ['ada@example.com', true, 'pro'],
    ['grace@example.com', true, 'free'],
    ['alan@example.com', true, 'pro'],
    ['edsger@example.com', false, 'pro'],
  ] as const) {
    const res = await stack.http.post('/contacts', { email, subscribed, data: { plan } }, { key: project.secretKey });
    expect(res.status).toBeLessThan(300);
  }
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const count = (body: unknown, key = project.secretKey) => stack.http.post('/campaigns/audience/count', body, { key });
const proFilter = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

test('ALL, SEGMENT and FILTERED audiences count the contacts a send would go to; MARKETING only the subscribed ones', async () => {
  expect((await count({ audienceType: 'ALL' })).body).toEqual({ success: true, data: { recipients: 3 } });
  expect((await count({ audienceType: 'ALL', type: 'TRANSACTIONAL' })).body.data.recipients).toBe(4);
  expect((await count({ audienceType: 'FILTERED', audienceCondition: proFilter })).body.data.recipients).toBe(2);
  expect((await count({ audienceType: 'FILTERED', type: 'TRANSACTIONAL', audienceCondition: proFilter })).body.data.recipients).toBe(3);

  const segment = await stack.http.post('/segments', { name: 'Picked', type: 'STATIC' }, { key: project.secretKey });
  expect(segment.status).toBe(201);
  await stack.http.post(`/segments/${segment.body.id}/members`, { emails: ['ada@example.com', 'edsger@example.com'] }, { key: project.secretKey });
  expect((await count({ audienceType: 'SEGMENT', segmentId: segment.body.id })).body.data.recipients).toBe(1);

  // The count is what the send fixes: a draft to the same audience would go to as many.
  const other = await accountWithProject(stack.http);
  expect((await count({ audienceType: 'ALL' }, other.project.secretKey)).body.data.recipients).toBe(0);
});

test('an audience a campaign could not have is refused as POST /campaigns refuses it', async () => {
  const missingSegment = await count({ audienceType: 'SEGMENT' });
  expect(missingSegment.status).toBe(422);
  expect(missingSegment.body.error.errors).toEqual([expect.objectContaining({ field: 'segmentId' })]);

  expect((await count({ audienceType: 'SEGMENT', segmentId: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
  expect((await count({ audienceType: 'EVERYONE' })).status).toBe(422);

  const badCondition = await count({
    audienceType: 'FILTERED',
    audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'nope' }] }] },
  });
  expect(badCondition.status).toBe(422);
  expect(badCondition.body.error.errors[0].field).toMatch(/^audienceCondition\./);

  expect((await stack.http.post('/campaigns/audience/count', { audienceType: 'ALL' })).status).toBe(401);
  expect((await count({ audienceType: 'ALL' }, project.publicKey)).status).toBe(401);
});
