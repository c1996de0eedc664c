import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { missingSearchAttributesMessage } from '../../temporal/namespaceSetup';

describe('a workflow start Temporal refuses for good', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Temporal refuses task queue names over 1,000 characters (INVALID_ARGUMENT): a refusal that
    // no retry can fix, like a missing search attribute.
    stack = await startTestStack({ worker: false, env: { TEMPORAL_TASK_QUEUE: 'q'.repeat(1001) } });
  });
  afterAll(() => stack.stop());

  it('answers 500 (not 503 "try again"), logs Temporal\'s reason, and leaves no job behind', async () => {
    const { project } = await accountWithProject(stack.http);
    const res = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: 'c.csv', content: 'email\na@example.com' });
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('INTERNAL_SERVER_ERROR');
    expect(res.body.error.message).toMatch(/Temporal refused to start the workflow/);
    const logged = stack.logs.find((l) => l.msg === 'could not start the job workflow');
    expect(logged).toMatchObject({ retryable: false, reason: expect.stringMatching(/task ?queue/i) });
    expect((await stack.orm.em.fork().execute(`select count(*)::int as n from jobs`))[0].n).toBe(0);
  });
});

describe('when the server will not let Mailroom register its search attributes (Temporal Cloud)', () => {
  it('the start-up message names the namespace, each missing attribute and how to create it', () => {
    const message = missingSearchAttributesMessage('acme.a1b2c', ['ProjectId', 'CampaignId', 'EmailIds'], 'PERMISSION_DENIED: Request unauthorized');
    expect(message).toContain('Temporal namespace "acme.a1b2c" lacks the search attributes ProjectId (Keyword), CampaignId (Keyword), EmailIds (KeywordList)');
    expect(message).toContain('temporal operator search-attribute create --namespace acme.a1b2c --name EmailIds --type KeywordList');
    expect(message).toContain('temporal operator search-attribute create --namespace acme.a1b2c --name ProjectId --type Keyword');
    expect(message).toContain('temporal operator search-attribute create --namespace acme.a1b2c --name CampaignId --type Keyword');
    expect(message).toContain('tcld namespace search-attributes add --namespace acme.a1b2c --search-attribute "ProjectId=Keyword"');
    expect(message).toContain('Custom Search Attributes');
  });
});
