import type { EntityManager } from '@mikro-orm/postgresql';
import type { Project } from '../../db/entities/project';
import type { User } from '../../db/entities/user';

/**
 * The onboarding checklist of a project, computed from what exists. Each capability adds its
 * step here when it lands (sender domain, first template, first send, ...).
 */
export async function projectSetupState(em: EntityManager, project: Project, user: User) {
  const [counts] = await em.execute<Array<{ members: number }>>(
    `select count(*)::int as members from project_members where project_id = ?`,
    [project.id],
  );
  const steps = {
    projectCreated: true,
    emailVerified: Boolean(user.emailVerifiedAt),
    teamInvited: counts.members > 1,
  };
  const done = Object.values(steps).filter(Boolean).length;
  return { projectId: project.id, steps, completed: done, total: Object.keys(steps).length, complete: done === Object.keys(steps).length };
}
