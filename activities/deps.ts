import type { Orm } from '../db/orm';
import type { MailTransport } from '../mail/mailTransport';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import type { EventTriggers } from '../services/events/eventTriggers';
import type { DeliveryRunRegistry } from '../services/webhooks/webhookDelivery';

/** What activities work with: the services of db/ and the mail transport, created once per worker. */
export interface ActivityDeps {
  config: Config;
  orm: Orm;
  mail: MailTransport;
  /** Campaign mail's own transport (its own SMTP connections); `mail` when not given. */
  campaignMail?: MailTransport;
  logger: Logger;
  eventTriggers: EventTriggers;
  /** How webhook delivery runs hear of due messages (createWorker makes them when not given). */
  webhookWakeups?: DeliveryRunRegistry;
}
