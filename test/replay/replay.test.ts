import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';

/**
 * Replays recorded histories (scripts/recordWorkflowHistories.ts) against today's workflow code:
 * a change that would break runs already in flight fails here, not in production.
 */
const dir = path.join(__dirname, 'histories');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));

it('has recorded histories for every workflow type', () => {
  const types = new Set(files.map((f) => f.split('-')[0]));
  expect([...types].sort()).toEqual([
    'accountEmailRequestWorkflow',
    'accountEmailWorkflow',
    'billingUsageReportWorkflow',
    'bulkContactsWorkflow',
    'campaignSendWorkflow',
    'domainRecheckWorkflow',
    'emailDeliverySweepWorkflow',
    'emailDeliveryWorkflow',
    'hourlyCleanupWorkflow',
    'importContactsWorkflow',
    'inboundMessagesWorkflow',
    'inboundSweepWorkflow',
    'trackedSegmentsRecomputeWorkflow',
    'webhookDeliveryWorkflow',
    'workflowExecutionSweepWorkflow',
    'workflowExecutionWorkflow',
  ]);
});

it.each(files)('replays %s deterministically', async (file) => {
  const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
  // Rejects (DeterminismViolationError) when today's code would not make the recorded decisions.
  await expect(
    Worker.runReplayHistory(
      {
        workflowBundle: { codePath: process.env.MAILROOM_WORKFLOW_BUNDLE! },
        replayName: file,
      },
      history,
      file.replace(/\.json$/, ''),
    ),
  ).resolves.toBeUndefined();
});
