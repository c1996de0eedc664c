import type { EntityManager } from '@mikro-orm/postgresql';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../../db/repositories/loginThrottleRepository';
import { clientAddressBudget } from '../../db/repositories/clientAddressBudget';
import { emailRepository } from '../../db/emails/emailRepository';

/**
 * What the hourly cleanup removes besides the retention kinds (retentionRules.ts): rows that
 * count nothing any more, and attachment contents no email needs. Each is one statement per
 * table, so neither needs the retention's time budget.
 */

/**
 * A project's rate-limit row counts nothing once its newest second has left the rolling minute;
 * after another minute idle it goes, and the project's next request creates it again.
 */
const RATE_LIMIT_ROW_IDLE_SECONDS = 120;

/**
 * An attachment set is stored before its emails are recorded: one younger than this may belong
 * to a request still recording them.
 */
const ATTACHMENT_SET_MIN_AGE_SECONDS = 3600;

/** Idle rate-limit rows, and the login throttle's and the client-address budgets' passed windows; answers how many rows went. */
export async function deleteStaleRateLimitWindows(em: EntityManager): Promise<number> {
  const rateLimitRows = await rateLimitRepository.deleteIdle(em, RATE_LIMIT_ROW_IDLE_SECONDS);
  const loginCounters = await loginThrottleRepository.deleteExpired(em, LOGIN_THROTTLE.windowMinutes);
  const addressCounters = await clientAddressBudget.deleteExpired(em);
  return rateLimitRows + loginCounters + addressCounters;
}

/**
 * Attachment contents are kept until their emails are done with them: a set past
 * ATTACHMENT_SET_MIN_AGE_SECONDS goes once no email still to be delivered points at it, or when
 * no email was ever recorded for it (its request failed after storing it). The email records
 * keep their content otherwise.
 */
export async function deleteSpentAttachments(em: EntityManager): Promise<number> {
  return emailRepository.deleteUnusedAttachmentSets(em, ATTACHMENT_SET_MIN_AGE_SECONDS);
}
