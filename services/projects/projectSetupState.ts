import type { EntityManager } from '@mikro-orm/postgresql';
import type { Project } from '../../db/entities/project';
import type { User } from '../../db/entities/user';
import { ACTIVE_SUBSCRIPTION_STATUSES } from '../../db/billing/billingAccountRepository';

/**
 * The onboarding checklist of a project, computed from what exists. Each capability adds its
 * step here when it lands (sender domain, first template, first send, ...).
 */
export async function projectSetupState(em: EntityManager, project: Project, user: User, options: { billing?: boolean } = {}) {
  const [counts] = await em.execute<Array<{ members: number; verifiedDomains: number; templates: boolean; sent: boolean }>>(
    `select (select count(*)::int from project_members where project_id = ?) as members,
            (select count(*)::int from domains where project_id = ? and status = 'VERIFIED') as "verifiedDomains",
            exists (select 1 from templates where project_id = ?) as templates,
            -- Any email that left (or got further); a project's first send is a one-row lookup.
            exists (select 1 from emails where project_id = ? and sent_at is not null) as sent`,
    [project.id, project.id, project.id, project.id],
  );
  const steps = {
    projectCreated: true,
    emailVerified: Boolean(user.emailVerifiedAt),
    teamInvited: counts.members > 1,
    domainVerified: counts.verifiedDomains > 0,
    templateCreated: counts.templates,
    firstEmailSent: counts.sent,
    // With billing on (STRIPE_SECRET_KEY), a project is set up once it has a paying subscription.
    ...(options.billing ? { subscriptionActive: await hasActiveSubscription(em, project.id) } : {}),
  };
  const done = Object.values(steps).filter(Boolean).length;
  return { projectId: project.id, steps, completed: done, total: Object.keys(steps).length, complete: done === Object.keys(steps).length };
}

async function hasActiveSubscription(em: EntityManager, projectId: string): Promise<boolean> {
  const rows = await em.execute(`select 1 from billing_accounts where project_id = ? and subscription_status = any(?::text[])`, [
    projectId,
    `{${ACTIVE_SUBSCRIPTION_STATUSES.join(',')}}`,
  ]);
  return rows.length > 0;
}
