import type { EntityManager } from '@mikro-orm/postgresql';
import { billingUsageRepository, USAGE_CATEGORIES, type CategoryUsage, type UsageCategory } from '../../db/billing/billingUsageRepository';
import type { EmailSource } from '../../db/emails/emailKinds';

export { USAGE_CATEGORIES, type CategoryUsage, type UsageCategory };

/** Which category an email counts against; received mail (services/inbound) counts against `inbound`. */
export const categoryOfSource: Record<EmailSource, UsageCategory> = {
  TRANSACTIONAL: 'transactional',
  CAMPAIGN: 'campaigns',
  WORKFLOW: 'workflows',
  INBOUND: 'inbound',
};

/** A reservation that would take a category past its cap; nothing was reserved. */
export class BillingLimitExceeded extends Error {
  constructor(
    readonly category: UsageCategory,
    readonly limit: number,
    readonly used: number,
    readonly requested: number,
  ) {
    super(
      `The ${category} cap of ${limit} emails this month (UTC) is reached: ${used} counted, ${requested} more would pass it. ` +
        `Raise or lift it with PUT /users/@me/projects/:id/billing-limits.`,
    );
    this.name = 'BillingLimitExceeded';
  }
}

/** The refusal of `n` more emails that would pass the cap as `current` reads it, or null when they fit. */
export function capRefusal(category: UsageCategory, current: CategoryUsage, n: number): BillingLimitExceeded | null {
  return current.limit !== null && current.usage + n > current.limit ? new BillingLimitExceeded(category, current.limit, current.usage, n) : null;
}

/**
 * The per-project monthly caps (contract 17): a cap lets a count reach it, never pass it.
 *
 * A category's counter (db/billing/billingUsageRepository.ts) is raised in the same transaction
 * that records the emails, under the counter row's lock, so two sends can never both pass a cap.
 * It is lowered when an email ends FAILED or SUPPRESSED or is withdrawn before any attempt
 * (`release`, and the statements that end emails), so it always equals the month's emails of that
 * source that were not FAILED or SUPPRESSED (those since deleted included: deleting data gives no
 * quota back).
 *
 * Callers: services/sending/deliveryScheduler.ts (transactional sends, campaign test emails), the
 * campaign waves (their recording statement raises the counter itself, under the same row lock:
 * db/campaigns/campaignWaveRepository.ts), the workflow SEND_EMAIL
 * step (`reserve` with category 'workflows', services/billing/countedEmails.ts), and received mail
 * (services/inbound/inboundProcessing.ts: `headroom`, then `add`). Lock order: one category row per
 * call; a caller reserving for several projects does so in project id order.
 */
export const usageCaps = {
  /**
   * Counts `n` emails against `category` this month, all or nothing; throws BillingLimitExceeded
   * when that would pass the cap. Call it inside the transaction that records the emails, so a
   * rollback takes the reservation back with them.
   */
  async reserve(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<void> {
    if (n <= 0) return;
    // The statement compares the count with the cap itself: one round trip, the row locked by the raise.
    if (await billingUsageRepository.raiseWithinCap(em, projectId, category, n)) return;
    const { limit, usage } = await billingUsageRepository.current(em, projectId, category);
    throw new BillingLimitExceeded(category, limit ?? 0, usage, n);
  },

  /**
   * How many more emails the cap allows this month (0 once it is reached), and the cap; null when
   * the category has no cap. With a cap, the counter row stays locked until the transaction
   * ends, so a concurrent transaction reads the count this one leaves. Must run inside a
   * transaction; received mail uses it to tell which copies are past the cap (they are still
   * recorded and counted with `add`, without an event).
   */
  async headroom(em: EntityManager, projectId: string, category: UsageCategory): Promise<{ left: number; limit: number } | null> {
    // No cap, nothing to lock: a project without one does not queue its transactions on the row.
    if (!(await billingUsageRepository.hasCap(em, projectId, category))) return null;
    const { limit, used } = await billingUsageRepository.lockCounter(em, projectId, category);
    return limit === null ? null : { left: Math.max(0, limit - used), limit };
  },

  /**
   * Counts `n` emails whatever the cap: received mail was already let in (the inbound listener
   * answers 452 at RCPT to a project at its cap, SES cannot be asked to keep a message), and a
   * message cannot be handed back once taken.
   */
  async add(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<void> {
    if (n <= 0) return;
    await billingUsageRepository.raise(em, projectId, category, n);
  },

  /** Gives back `n` emails counted in `month` (the month the emails were recorded in; default the current one). */
  async release(em: EntityManager, projectId: string, category: UsageCategory, n: number, month?: Date): Promise<void> {
    if (n <= 0) return;
    await billingUsageRepository.release(em, projectId, category, n, month);
  },

  /**
   * Would `n` more emails pass the cap right now? A read without locks, for refusing a send
   * before anything is written; the reservation in the recording transaction is what decides.
   */
  async wouldExceed(em: EntityManager, projectId: string, category: UsageCategory, n: number): Promise<BillingLimitExceeded | null> {
    return capRefusal(category, await billingUsageRepository.current(em, projectId, category), n);
  },

  /** A category's cap and this month's count, read without locks. */
  current(em: EntityManager, projectId: string, category: UsageCategory): Promise<CategoryUsage> {
    return billingUsageRepository.current(em, projectId, category);
  },
};
