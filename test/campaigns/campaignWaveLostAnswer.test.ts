import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import type { NewEmail } from '../../db/emails/emailRepository';
import { campaignSendRepository } from '../../db/campaigns/campaignSendRepository';
import { campaignAudienceSql } from '../../db/campaigns/campaignAudience';
import { campaignWaveRepository, type WaveEmail } from '../../db/campaigns/campaignWaveRepository';
import { campaignBatchKey } from '../../services/campaigns/campaignBatchClaims';
import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';

/**
 * A wave's recording statement whose commit's answer is lost (the database went away just then) is
 * run again by retryWhileDatabaseUnavailable. The second run finds the wave's rows already written
 * under the wave's own ids: it must still answer them as recorded, since only what it answers is
 * handed over, and a row that says SENT for mail never handed over is what record-once forbids
 * (databaseRestart.test.ts once saw 27 recipients of a SENT campaign never receive their mail).
 */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ worker: false });
}, 120_000);
afterAll(() => stack?.stop());

function campaignEmail(projectId: string, campaignId: string, contact: { id: string; email: string }): NewEmail {
  return {
    id: newTimeOrderedId(),
    projectId,
    contactId: contact.id,
    templateId: null,
    campaignId,
    workflowExecutionId: null,
    source: 'CAMPAIGN',
    type: 'MARKETING',
    subject: 'News',
    fromAddress: 'news@example.com',
    fromName: null,
    replyTo: null,
    toAddress: contact.email,
    toName: null,
    html: '<p>News</p>',
    text: 'News',
    headers: {},
    attachmentSetId: null,
    status: 'QUEUED',
    messageId: `<${newTimeOrderedId()}@example.com>`,
    deliveryWorkflowId: `campaign-${campaignId}`,
  };
}

it('a wave recorded twice (its answer lost) is answered as recorded both times, written and counted once', async () => {
  const { project } = await accountWithProject(stack.http);
  const em = () => stack.orm.em.fork();
  await em().execute(`insert into contacts (project_id, email) select ?, 'reader' || g || '@example.org' from generate_series(1, 3) g`, [project.id]);
  const [campaign] = await em().execute(
    `insert into campaigns (project_id, name, subject, body, from_address, audience_type, type, status)
     values (?, 'lost answer', 's', 'b', 'news@example.com', 'ALL', 'MARKETING', 'SENDING') returning id`,
    [project.id],
  );
  const send = (await campaignSendRepository.find(em(), campaign.id))!;
  await campaignSendRepository.fixAudience(em(), send, await campaignAudienceSql(em(), send));
  await campaignWaveRepository.ensureCounter(em(), project.id);
  const page = await campaignSendRepository.recipientsPage(em(), campaign.id, null, 500);
  const batchStart = campaignBatchKey(null);
  const attempt = `test-${newTimeOrderedId()}`;
  await campaignWaveRepository.takeBatch(em(), campaign.id, batchStart, attempt);
  const stamp = { date: 'Sat, 28 Nov 2026 09:00:00 +0000', boundary: '=_lost-answer', dkimSignature: null };
  const wave: WaveEmail[] = page.contacts.map((c) => ({ email: campaignEmail(project.id, campaign.id, c), stamp, failure: null }));
  const round = {
    campaignId: campaign.id,
    projectId: project.id,
    batchStart,
    attempt,
    refusals: { suppressed: 'suppressed', unsubscribed: 'unsubscribed' },
    handedOver: [],
    wave,
    release: false,
  };

  const first = await campaignWaveRepository.recordRound(em(), round);
  const again = await campaignWaveRepository.recordRound(em(), round);

  const ids = wave.map((w) => w.email.id).sort();
  const sent = (r: typeof first) =>
    r.recorded
      .filter((e) => e.status === 'SENT')
      .map((e) => e.id)
      .sort();
  expect(sent(first)).toEqual(ids);
  expect(sent(again)).toEqual(ids);
  const [{ rows }] = await em().execute(`select count(*)::int as rows from emails where campaign_id = ?`, [campaign.id]);
  expect(rows).toBe(3);
  const [{ used }] = await em().execute(`select used from billing_usage where project_id = ? and category = 'campaigns'`, [project.id]);
  expect(Number(used)).toBe(3);
});
