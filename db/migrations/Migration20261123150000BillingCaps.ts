import { Migration } from '@mikro-orm/migrations';

/**
 * Billing (contract section 17): per-project monthly caps by category, the usage counters the
 * caps are enforced against, the project's Stripe customer and subscription, the Stripe events
 * already applied (replays change nothing), and the usage reports owed to Stripe.
 */
export class Migration20261123150000BillingCaps extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      -- Why a project is disabled (PAYMENT_FAILED when Stripe reported a failed payment).
      alter table projects add column disabled_reason text;

      -- A campaign that stopped before its last recipient says why: {"code", "category", "message"}.
      alter table campaigns add column stop_reason jsonb;

      -- One row per capped category; no row = unlimited.
      create table billing_limits (
        project_id uuid not null references projects (id) on delete cascade,
        category text not null check (category in ('transactional', 'campaigns', 'workflows', 'inbound')),
        monthly_limit integer not null check (monthly_limit > 0),
        updated_at timestamptz not null default now(),
        primary key (project_id, category)
      );

      -- Emails counted against a category in a calendar month (UTC): raised in the transaction
      -- that records them (only while under the cap), lowered when one ends FAILED or SUPPRESSED
      -- or is withdrawn unattempted. The row lock is what serialises two sends at a cap's edge.
      create table billing_usage (
        project_id uuid not null references projects (id) on delete cascade,
        month date not null,
        category text not null check (category in ('transactional', 'campaigns', 'workflows', 'inbound')),
        used bigint not null default 0 check (used >= 0),
        primary key (project_id, month, category)
      );

      create table billing_accounts (
        project_id uuid primary key references projects (id) on delete cascade,
        stripe_customer_id text not null unique,
        stripe_subscription_id text,
        subscription_status text,
        current_period_start timestamptz,
        current_period_end timestamptz,
        -- Stripe's "created" of the last subscription / payment event applied: an older event
        -- arriving late (Stripe does not promise order) does not undo a newer one.
        subscription_event_at timestamptz,
        payment_event_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );

      -- Every Stripe event applied, by its id: a replayed delivery is acknowledged and ignored.
      create table stripe_events (
        id text primary key,
        type text not null,
        project_id uuid references projects (id) on delete set null,
        received_at timestamptz not null default now()
      );

      -- Usage owed to Stripe. A row is written before the meter event is sent, with the
      -- identifier Stripe deduplicates on, so a report repeated after an outage or a crash is
      -- the same report. to_total is the watermark: the month's counter up to which Stripe knows.
      create table billing_usage_reports (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        month date not null,
        stripe_customer_id text not null,
        from_total bigint not null check (from_total >= 0),
        to_total bigint not null,
        created_at timestamptz not null default now(),
        reported_at timestamptz,
        attempts integer not null default 0,
        last_error text,
        check (to_total > from_total),
        unique (project_id, month, to_total)
      );
      create index billing_usage_reports_unreported_index on billing_usage_reports (created_at) where reported_at is null;
    `);
  }
}
