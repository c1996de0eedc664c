import type { EntityManager } from '@mikro-orm/postgresql';
import type { ParameterizedContext } from 'koa';
import type Router from '@koa/router';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import type { Orm } from '../db/orm';
import type { TemporalHandle } from '../temporal/client';
import type { Project } from '../db/entities/project';
import type { User } from '../db/entities/user';
import type { EventTriggers } from '../services/events/eventTriggers';
import type { ContactWriteBatcher } from '../services/contacts/contactWriteBatcher';
import type { ApiKeyResolver } from '../db/repositories/apiKeyResolver';
import type { CheckedSenderDomain } from '../services/domains/senderDomainLookup';
import type { SenderDomainLookup } from '../services/domains/senderDomainLookup';
import type { CapUsageLookup } from '../services/billing/capUsageLookup';
import type { DeliveryScheduler } from '../services/sending/deliveryScheduler';
import type { SnsFetcher } from '../mail/sns/snsFetcher';
import type { ObjectStore } from '../lib/objectStorage/objectStore';
import type { InboundServices } from '../services/inbound/inboundReceipt';
import type { SmtpListenerStatus } from './smtp/listenerStatus';
import type { RequestLogWriter } from '../services/requestLog/requestLogWriter';

/** Services the API is built from; created once per process by api/server.ts. */
export interface ApiDeps {
  config: Config;
  orm: Orm;
  temporal: TemporalHandle;
  logger: Logger;
  eventTriggers: EventTriggers;
  contactWrites: ContactWriteBatcher;
  apiKeys: ApiKeyResolver;
  senderDomains: SenderDomainLookup;
  capUsage: CapUsageLookup;
  deliveries: DeliveryScheduler;
  /** Reads SNS signing certificates and subscription URLs; https by default, replaced in tests. */
  snsFetch?: SnsFetcher;
  /** Where uploaded images are kept (DATA_DIR/uploads or an S3 bucket). */
  objectStore: ObjectStore;
  /**
   * Mail in (contract 20): who receives at an address and the durable store with its processing
   * workflows, one of each per API process, shared by the SMTP listener and SES receipt
   * notifications (POST /webhooks/sns), so SES mail is received whether or not the listener runs.
   */
  inbound: InboundServices;
  /** The project request log's buffered writer (GET /requests); absent = nothing is logged. */
  requestLog?: RequestLogWriter;
  /** The SMTP roles listening now (api/smtp/index.ts), for GET /config; absent = none. */
  smtpStatus?: SmtpListenerStatus;
  /** True once the server has begun to shut down (api/httpDrain.ts): /health answers 503. */
  isDraining?: () => boolean;
}

export interface AppState {
  requestId: string;
  em: EntityManager;
  /** Set by the key middleware: the project the key (or session + X-Project-Id) belongs to. */
  project?: Project;
  keyKind?: 'public' | 'secret' | 'session';
  /** The rate limiter's verdict on this request, when the key lookup already counted it. */
  rateLimitHit?: import('../db/repositories/rateLimitRepository').RateLimitHit;
  /** Set by the session middleware, and by the key middleware for a session + X-Project-Id. */
  user?: User;
  /** Set by the idempotency middleware when the request carries an `Idempotency-Key` it claimed. */
  idempotency?: IdempotencyClaim;
  /** Set by the key middleware when it was told the request's sender address: its verified domain, read with the key. */
  checkedSender?: CheckedSenderDomain;
}

/** A claimed `Idempotency-Key` (api/middleware/idempotency.ts), for a route whose work commits in one transaction. */
export interface IdempotencyClaim {
  /**
   * Writes `status` as the key's outcome in the transaction `tx` that does the request's work, so
   * it commits with the work: a process killed after the commit never leaves the key in flight.
   * The middleware then leaves the key as that transaction wrote it when the answer is `status`.
   */
  outcomeIn(status: number): (tx: EntityManager) => Promise<void>;
}

export type AppContext = ParameterizedContext<AppState>;
export type AppRouter = Router<AppState>;
