import type { EntityManager } from '@mikro-orm/postgresql';
import { ProjectMemberSchema, type MemberRole, type ProjectMember } from '../entities/projectMember';

export const memberRepository = {
  async find(em: EntityManager, projectId: string, userId: string): Promise<ProjectMember | null> {
    return em.findOne(ProjectMemberSchema, { projectId, userId });
  },

  async listWithUsers(em: EntityManager, projectId: string) {
    return em.execute<Array<{ user_id: string; email: string; role: MemberRole; created_at: Date }>>(
      `select m.user_id, u.email, m.role, m.created_at from project_members m join users u on u.id = m.user_id
       where m.project_id = ? order by m.created_at asc, u.email asc`,
      [projectId],
    );
  },

  async countOwners(em: EntityManager, projectId: string): Promise<number> {
    return em.count(ProjectMemberSchema, { projectId, role: 'OWNER' });
  },
};
