import type { EntityManager } from '@mikro-orm/postgresql';
import type { CampaignRow } from '../../db/campaigns/campaignRepository';
import { sendTestCopy, type TestCopySendDeps, type TestCopySent } from '../sending/testCopySend';

/**
 * POST /campaigns/:id/test: one rendered copy of a campaign to one address, `[TEST] …`, counted in
 * none of the campaign's statistics (services/sending/testCopySend.ts says how). An address that
 * is a contact is rendered with its data; any other address with empty data.
 */
export function sendCampaignTest(deps: TestCopySendDeps, em: EntityManager, campaign: CampaignRow, address: string): Promise<TestCopySent> {
  return sendTestCopy(deps, em, { ...campaign, source: 'CAMPAIGN' }, address);
}
