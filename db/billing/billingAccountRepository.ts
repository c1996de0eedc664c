import type { EntityManager } from '@mikro-orm/postgresql';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';

export interface BillingAccount {
  projectId: string;
  stripeCustomerId: string;
  stripeSubscriptionId: string | null;
  subscriptionStatus: string | null;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
}

/** Subscription states in which the project is paying (or trialling). */
export const ACTIVE_SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due'] as const;

/** A `billing_accounts` row as a statement returns it. */
interface BillingAccountTableRow {
  project_id: string;
  stripe_customer_id: string;
  stripe_subscription_id: string | null;
  subscription_status: string | null;
  current_period_start: TimestampText | null;
  current_period_end: TimestampText | null;
  subscription_event_at: TimestampText | null;
  payment_event_at: TimestampText | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

function toAccount(row: BillingAccountTableRow): BillingAccount {
  return {
    projectId: row.project_id,
    stripeCustomerId: row.stripe_customer_id,
    stripeSubscriptionId: row.stripe_subscription_id,
    subscriptionStatus: row.subscription_status,
    currentPeriodStart: dateOrNull(row.current_period_start),
    currentPeriodEnd: dateOrNull(row.current_period_end),
  };
}

/** What a subscription event says, taken from Stripe's object. */
export interface SubscriptionState {
  subscriptionId: string;
  status: string;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
}

/** Which project a Stripe event concerns, and whether it was applied before. */
export type StripeEventOutcome = 'applied' | 'duplicate' | 'stale' | 'unknown-customer' | 'ignored';

/**
 * A project's Stripe customer and subscription, and the effects of Stripe's events. Every effect
 * is applied in one transaction with the record of the event's id (stripe_events), so a replayed
 * event changes nothing; an event older than the last one applied of its kind (Stripe does not
 * promise order) changes nothing either.
 */
export const billingAccountRepository = {
  async find(em: EntityManager, projectId: string): Promise<BillingAccount | null> {
    const rows = await queryRows<BillingAccountTableRow>(em, `select * from billing_accounts where project_id = ?`, [projectId]);
    return rows.length ? toAccount(rows[0]) : null;
  },

  /** Whether the project's subscription is in one of ACTIVE_SUBSCRIPTION_STATUSES. */
  async hasActiveSubscription(em: EntityManager, projectId: string): Promise<boolean> {
    const rows = await em.execute(`select 1 from billing_accounts where project_id = ? and subscription_status = any(?::text[])`, [
      projectId,
      `{${ACTIVE_SUBSCRIPTION_STATUSES.join(',')}}`,
    ]);
    return rows.length > 0;
  },

  /** Links the project to its Stripe customer; the first link wins (a concurrent checkout finds it). */
  async link(em: EntityManager, projectId: string, stripeCustomerId: string): Promise<BillingAccount> {
    await em.execute(`insert into billing_accounts (project_id, stripe_customer_id) values (?, ?) on conflict do nothing`, [projectId, stripeCustomerId]);
    return (await this.find(em, projectId))!;
  },

  /**
   * Records the event's id; false when it was recorded before (a replay). Call first, inside the
   * transaction that applies the event.
   */
  async recordEvent(em: EntityManager, eventId: string, type: string): Promise<boolean> {
    const rows = await em.execute(`insert into stripe_events (id, type) values (?, ?) on conflict do nothing returning id`, [eventId, type]);
    return rows.length > 0;
  },

  async noteEventProject(em: EntityManager, eventId: string, projectId: string): Promise<void> {
    await em.execute(`update stripe_events set project_id = ? where id = ?`, [projectId, eventId]);
  },

  /** The project whose customer this is; falling back to the project id Mailroom put in the metadata. */
  async projectOf(em: EntityManager, stripeCustomerId: string | null, metadataProjectId?: string | null): Promise<string | null> {
    if (stripeCustomerId) {
      const rows = await queryRows<Pick<BillingAccountTableRow, 'project_id'>>(em, `select project_id from billing_accounts where stripe_customer_id = ?`, [
        stripeCustomerId,
      ]);
      if (rows.length) return rows[0].project_id;
    }
    if (metadataProjectId && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(metadataProjectId) && stripeCustomerId) {
      const rows = await em.execute(`select id from projects where id = ?`, [metadataProjectId]);
      if (rows.length) {
        await this.link(em, metadataProjectId, stripeCustomerId);
        return metadataProjectId;
      }
    }
    return null;
  },

  /** Applies a subscription's state unless a newer subscription event was applied already. */
  async applySubscription(em: EntityManager, projectId: string, state: SubscriptionState, eventAt: Date): Promise<boolean> {
    const rows = await em.execute(
      `update billing_accounts set stripe_subscription_id = ?, subscription_status = ?, current_period_start = ?, current_period_end = ?,
         subscription_event_at = ?, updated_at = now()
       where project_id = ? and (subscription_event_at is null or subscription_event_at <= ?)
       returning project_id`,
      [state.subscriptionId, state.status, state.currentPeriodStart, state.currentPeriodEnd, eventAt, projectId, eventAt],
    );
    return rows.length > 0;
  },

  /**
   * A failed payment disables the project (PAYMENT_FAILED: its sends answer 403); a later
   * successful one enables it again, unless something else disabled it. Out-of-order events
   * are ordered by Stripe's `created`.
   */
  async applyPayment(em: EntityManager, projectId: string, paid: boolean, eventAt: Date): Promise<boolean> {
    const rows = await em.execute(
      `update billing_accounts set payment_event_at = ?, updated_at = now()
       where project_id = ? and (payment_event_at is null or payment_event_at <= ?) returning project_id`,
      [eventAt, projectId, eventAt],
    );
    if (!rows.length) return false;
    if (paid) {
      await em.execute(
        `update projects set disabled = false, disabled_reason = null, updated_at = now() where id = ? and disabled and disabled_reason = 'PAYMENT_FAILED'`,
        [projectId],
      );
    } else {
      await em.execute(
        `update projects set disabled = true, disabled_reason = coalesce(disabled_reason, 'PAYMENT_FAILED'), updated_at = now()
         where id = ? and (not disabled or disabled_reason = 'PAYMENT_FAILED')`,
        [projectId],
      );
    }
    return true;
  },
};
