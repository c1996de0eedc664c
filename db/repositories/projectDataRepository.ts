import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Every table that holds a project's data (as opposed to the project itself and its members).
 * A project reset empties exactly these; a test checks that every table with a project_id
 * column is either listed here or deliberately kept.
 */
// Order matters only for readability: every reference cascades.
export const projectDataTables = ['campaigns', 'segments', 'emails', 'email_attachment_sets', 'email_suppressions', 'events', 'job_uploads', 'jobs', 'contacts', 'idempotency_keys', 'rate_limit_seconds', 'outbox_messages',
  // The analytics rollups count what the wiped rows did: a reset starts the dashboards over too.
  'analytics_email_hourly', 'analytics_email_daily', 'analytics_campaign_counts', 'analytics_event_hourly', 'analytics_event_daily', 'analytics_workflow_hourly', 'analytics_workflow_daily'] as const;
// Sender domains and templates are set-up, like keys: a reset does not make the owner redo their
// DNS records or rewrite their templates.
export const projectTablesKeptOnReset = ['projects', 'project_members', 'domains', 'templates'] as const;

export const projectDataRepository = {
  /** Wipes the project's data in one transaction: all of it or none. */
  async wipe(em: EntityManager, projectId: string): Promise<Record<string, number>> {
    return em.transactional(async (tx) => {
      const counts: Record<string, number> = {};
      for (const table of projectDataTables) {
        const rows = await tx.execute(`with gone as (delete from ${table} where project_id = ? returning 1) select count(*)::int as n from gone`, [projectId]);
        counts[table] = rows[0].n;
      }
      return counts;
    });
  },
};
