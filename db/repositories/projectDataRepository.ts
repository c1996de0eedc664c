import type { EntityManager } from '@mikro-orm/postgresql';
import { deleteContacts, lockContactsForDeletion } from '../contacts/contactDeletion';

/**
 * Every table that holds a project's data (as opposed to the project itself and its members).
 * A project reset empties exactly these; a test checks that every table with a project_id
 * column is either listed here or deliberately kept.
 */
// Order matters only for readability: every reference cascades.
export const projectDataTables = [
  'workflow_executions',
  'campaigns',
  'segments',
  'emails',
  'email_attachment_sets',
  'email_suppressions',
  'events',
  'job_uploads',
  'jobs',
  'contacts',
  'idempotency_keys',
  'rate_limit_seconds',
  'outbox_messages',
  // Outbound webhook messages record what happened to the wiped events: they go with them, pending
  // ones included (nothing is pushed for data the owner chose to wipe).
  'webhook_messages',
  // The analytics rollups count what the wiped rows did: a reset starts the dashboards over too.
  'analytics_email_hourly',
  'analytics_email_daily',
  'analytics_campaign_counts',
  'analytics_event_hourly',
  'analytics_event_daily',
  'analytics_workflow_hourly',
  'analytics_workflow_daily',
] as const;
// Sender domains, templates and automation workflows are set-up, like keys: a reset does not make
// the owner redo their DNS records or rebuild their templates and workflows (their executions,
// like the contacts they ran for, are data and go). Uploaded images stay with the templates whose
// bodies link to them (and with mail already sent that shows them).
// Billing is kept too: caps are set-up, and the month's usage, the subscription, the reports owed
// to Stripe and the events applied are the account's, not data a reset may take back.
export const projectTablesKeptOnReset = [
  'projects',
  'project_members',
  'domains',
  'templates',
  'workflows',
  'uploads',
  'billing_limits',
  'billing_usage',
  'billing_accounts',
  'billing_usage_reports',
  'stripe_events',
  // The request log (GET /requests) is a record of how the project's keys were used, not its
  // data: it stays, and goes by its own retention (REQUEST_LOG_RETENTION_DAYS).
  'api_requests',
  // Webhook endpoints are set-up, like domains: a reset keeps them (their messages go, above).
  'webhook_endpoints',
] as const;

export const projectDataRepository = {
  /**
   * Wipes the project's data in one transaction: all of it or none. Its contacts go through
   * deleteContacts, and the contact deletion lock is its first statement: a writer holding the
   * lock (a campaign wave) commits before any of the project's rows go.
   */
  async wipe(em: EntityManager, projectId: string): Promise<Record<string, number>> {
    return em.transactional(async (tx) => {
      await lockContactsForDeletion(tx, projectId);
      const counts: Record<string, number> = {};
      for (const table of projectDataTables) {
        if (table === 'contacts') {
          counts[table] = await deleteContacts(tx, projectId, 'all');
          continue;
        }
        const rows = await tx.execute(`with gone as (delete from ${table} where project_id = ? returning 1) select count(*)::int as n from gone`, [projectId]);
        counts[table] = rows[0].n;
      }
      return counts;
    });
  },
};
