import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { insertSentEmail } from '../support/emailFixtures';
import { createCleanupActivities } from '../../activities/cleanupActivities';

let stack: TestStack;
let project: TestProject;
beforeAll(async () => {
  // No worker: nothing but the test touches the emails it writes.
  stack = await startTestStack({ worker: false });
  ({ project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

async function attachmentSet(age: string, emailStatus?: string): Promise<string> {
  const [set] = await sql(`insert into email_attachment_sets (project_id, created_at) values (?, now() - ?::interval) returning id`, [project.id, age]);
  if (emailStatus) {
    const { emailId } = await insertSentEmail(stack, project.id, { status: emailStatus });
    await sql(`update emails set attachment_set_id = ? where id = ?`, [set.id, emailId]);
  }
  return set.id;
}

it('the hourly cleanup removes attachment sets an hour old that no email still to be delivered points at', async () => {
  const unused = await attachmentSet('61 minutes');
  const delivered = await attachmentSet('2 hours', 'SENT');
  const beingSent = await attachmentSet('2 hours', 'SENDING');
  const young = await attachmentSet('59 minutes');

  await createCleanupActivities(stack).deleteSpentAttachments();

  const left = (await sql(`select id from email_attachment_sets where id in (?, ?, ?, ?)`, [unused, delivered, beingSent, young])).map((r) => r.id);
  expect(left.sort()).toEqual([beingSent, young].sort());
});
