import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject } from '../support/accounts';
import type { NewEmail } from '../../db/emails/emailRepository';
import { campaignSendRepository } from '../../db/campaigns/campaignSendRepository';
import { campaignAudienceSql } from '../../db/campaigns/campaignAudience';
import { campaignWaveRepository, type WaveEmail, type WaveRound } from '../../db/campaigns/campaignWaveRepository';
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

/** A SENDING campaign of three contacts whose first batch `attempt` holds, and its first wave, built. */
async function batchWithWave() {
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
  const round: WaveRound = {
    campaignId: campaign.id,
    projectId: project.id,
    batchStart,
    attempt,
    refusals: { suppressed: 'suppressed', unsubscribed: 'unsubscribed' },
    handedOver: [],
    wave,
    release: false,
  };
  const ids = wave.map((w) => w.email.id).sort();
  // The next round: the wave handed over, the relay took every message; nothing more to record.
  const next: WaveRound = { ...round, wave: [], handedOver: ids.map((emailId) => ({ emailId, status: 'SENT', providerMessageId: null })) };
  return { em, campaignId: campaign.id as string, projectId: project.id, round, next, ids };
}

const sentIds = (r: { recorded: Array<{ id: string; status: string }> }) =>
  r.recorded
    .filter((e) => e.status === 'SENT')
    .map((e) => e.id)
    .sort();

const eventCount = async (em: () => ReturnType<TestStack['orm']['em']['fork']>, campaignId: string) =>
  (await em().execute(`select count(*)::int as n from events where name = 'email.sent' and data->>'campaignId' = ?`, [campaignId]))[0].n;

it('a wave recorded twice (its answer lost) is answered as recorded both times, written and counted once', async () => {
  const { em, campaignId, projectId, round, next, ids } = await batchWithWave();

  const first = await campaignWaveRepository.recordRound(em(), round);
  const again = await campaignWaveRepository.recordRound(em(), round);

  expect(sentIds(first)).toEqual(ids);
  expect(sentIds(again)).toEqual(ids);
  const [{ rows }] = await em().execute(`select count(*)::int as rows from emails where campaign_id = ?`, [campaignId]);
  expect(rows).toBe(3);
  const [{ used }] = await em().execute(`select used from billing_usage where project_id = ? and category = 'campaigns'`, [projectId]);
  expect(Number(used)).toBe(3);

  // The next round, its answer lost too: the hand-over's email.sent events are written once (a
  // second copy would reach every webhook endpoint twice).
  const handed = await campaignWaveRepository.recordRound(em(), next);
  const handedAgain = await campaignWaveRepository.recordRound(em(), next);
  expect([...handed.events.values()].flat()).toHaveLength(3);
  expect([...handedAgain.events.values()].flat()).toHaveLength(0);
  expect(await eventCount(em, campaignId)).toBe(3);
});

it('a wave recorded just before a cancel, run again after the cancel, stays pending and its hand-over is recorded', async () => {
  const { em, campaignId, round, next, ids } = await batchWithWave();

  await campaignWaveRepository.recordRound(em(), round);
  await em().execute(`update campaigns set status = 'CANCELLED' where id = ?`, [campaignId]);
  // Its answer was lost, and the campaign was cancelled meanwhile: the wave is recorded, so it is
  // answered as recorded (to be handed over), and it stays the batch's pending wave.
  const again = await campaignWaveRepository.recordRound(em(), round);
  expect(sentIds(again)).toEqual(ids);

  const handed = await campaignWaveRepository.recordRound(em(), { ...next, release: true });
  expect([...handed.events.values()].flat()).toHaveLength(3);
  expect(await eventCount(em, campaignId)).toBe(3);
});
