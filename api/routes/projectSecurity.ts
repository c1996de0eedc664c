import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../lib/config';
import type { Project } from '../../db/entities/project';
import type { MemberRole } from '../../db/entities/projectMember';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';

/**
 * A project's security overview: its keys (never the secret itself), who has access, and the
 * limits that protect it. Served at /users/@me/projects/:id/security and /projects/:id/security.
 */
export async function projectSecurity(em: EntityManager, config: Config, project: Project, role: MemberRole) {
  const [members] = await em.execute<Array<{ total: number; owners: number; admins: number }>>(
    `select count(*)::int as total,
            count(*) filter (where role = 'OWNER')::int as owners,
            count(*) filter (where role = 'ADMIN')::int as admins
     from project_members where project_id = ?`,
    [project.id],
  );
  return {
    projectId: project.id,
    disabled: project.disabled,
    yourRole: role,
    keys: {
      publicKey: project.publicKey,
      secretKeyHint: `sk_…${project.secretKeyHint}`,
      secretKeyStoredAs: 'sha256',
      createdAt: project.createdAt,
      lastRotatedAt: project.keysRotatedAt ?? null,
    },
    members,
    rateLimit: { perMinute: config.rateLimitPerMinute, usedThisMinute: await rateLimitRepository.usedNow(em, project.id) },
    idempotencyKeyTtlHours: config.idempotencyKeyTtlHours,
    signupsDisabled: config.disableSignups,
  };
}
