import { Migration20261122000000Foundation } from './Migration20261122000000Foundation';
import { Migration20261122010000ContactsEvents } from './Migration20261122010000ContactsEvents';
import { Migration20261122020000CheaperDataCheck } from './Migration20261122020000CheaperDataCheck';
import { Migration20261123010000EventOrder } from './Migration20261123010000EventOrder';
import { Migration20261123020000AccountSecurity } from './Migration20261123020000AccountSecurity';
import { Migration20261123030000RateLimitSeconds } from './Migration20261123030000RateLimitSeconds';
import { Migration20261123060000Domains } from './Migration20261123060000Domains';
import { Migration20261123040000StreamedUploads } from './Migration20261123040000StreamedUploads';
import { Migration20261123070000SendPipeline } from './Migration20261123070000SendPipeline';
import { Migration20261123080000SegmentsCampaigns } from './Migration20261123080000SegmentsCampaigns';
import { Migration20261123090000ConditionIndexes } from './Migration20261123090000ConditionIndexes';
import { Migration20261123100000CampaignSend } from './Migration20261123100000CampaignSend';
import { Migration20261123110000AutomationWorkflows } from './Migration20261123110000AutomationWorkflows';
import { Migration20261123111000WorkflowTemplateReference } from './Migration20261123111000WorkflowTemplateReference';
import { Migration20261123130000Uploads } from './Migration20261123130000Uploads';
import { Migration20261123150000BillingCaps } from './Migration20261123150000BillingCaps';
import { Migration20261123120000ExecutionSweeps } from './Migration20261123120000ExecutionSweeps';
import { Migration20261123140000AnalyticsRollups } from './Migration20261123140000AnalyticsRollups';
import { Migration20261125010000ShardedRollups } from './Migration20261125010000ShardedRollups';

/** Every migration, in order. Listed explicitly so they run the same under tsx, jest and Docker. */
export const migrationsList = [
  { name: 'Migration20261122000000Foundation', class: Migration20261122000000Foundation },
  { name: 'Migration20261122010000ContactsEvents', class: Migration20261122010000ContactsEvents },
  { name: 'Migration20261122020000CheaperDataCheck', class: Migration20261122020000CheaperDataCheck },
  { name: 'Migration20261123010000EventOrder', class: Migration20261123010000EventOrder },
  { name: 'Migration20261123020000AccountSecurity', class: Migration20261123020000AccountSecurity },
  { name: 'Migration20261123030000RateLimitSeconds', class: Migration20261123030000RateLimitSeconds },
  { name: 'Migration20261123060000Domains', class: Migration20261123060000Domains },
  { name: 'Migration20261123040000StreamedUploads', class: Migration20261123040000StreamedUploads },
  { name: 'Migration20261123070000SendPipeline', class: Migration20261123070000SendPipeline },
  { name: 'Migration20261123080000SegmentsCampaigns', class: Migration20261123080000SegmentsCampaigns },
  { name: 'Migration20261123090000ConditionIndexes', class: Migration20261123090000ConditionIndexes },
  { name: 'Migration20261123100000CampaignSend', class: Migration20261123100000CampaignSend },
  { name: 'Migration20261123110000AutomationWorkflows', class: Migration20261123110000AutomationWorkflows },
  { name: 'Migration20261123111000WorkflowTemplateReference', class: Migration20261123111000WorkflowTemplateReference },
  { name: 'Migration20261123120000ExecutionSweeps', class: Migration20261123120000ExecutionSweeps },
  { name: 'Migration20261123130000Uploads', class: Migration20261123130000Uploads },
  { name: 'Migration20261123140000AnalyticsRollups', class: Migration20261123140000AnalyticsRollups },
  { name: 'Migration20261123150000BillingCaps', class: Migration20261123150000BillingCaps },
  { name: 'Migration20261125010000ShardedRollups', class: Migration20261125010000ShardedRollups },
];
