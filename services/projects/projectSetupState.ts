import type { EntityManager } from '@mikro-orm/postgresql';
import type { Project } from '../../db/entities/project';
import type { User } from '../../db/entities/user';
import { projectRepository } from '../../db/repositories/projectRepository';
import { billingAccountRepository } from '../../db/billing/billingAccountRepository';

/**
 * The onboarding checklist of a project, computed from what exists. Each capability adds its
 * step here when it lands (sender domain, first template, first send, ...).
 */
export async function projectSetupState(em: EntityManager, project: Project, user: User, options: { billing?: boolean } = {}) {
  const counts = await projectRepository.setupCounts(em, project.id);
  const steps = {
    projectCreated: true,
    emailVerified: Boolean(user.emailVerifiedAt),
    teamInvited: counts.members > 1,
    domainVerified: counts.verifiedDomains > 0,
    templateCreated: counts.templates,
    firstEmailSent: counts.sent,
    // With billing on (STRIPE_SECRET_KEY), a project is set up once it has a paying subscription.
    ...(options.billing ? { subscriptionActive: await billingAccountRepository.hasActiveSubscription(em, project.id) } : {}),
  };
  const done = Object.values(steps).filter(Boolean).length;
  return { projectId: project.id, steps, completed: done, total: Object.keys(steps).length, complete: done === Object.keys(steps).length };
}
