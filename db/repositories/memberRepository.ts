import type { EntityManager } from '@mikro-orm/postgresql';
import { ProjectMemberSchema, type MemberRole, type ProjectMember } from '../entities/projectMember';
import { queryRows, type TimestampText } from '../sql/rows';

/** A member with the user's email, as the dashboard lists them. */
export interface MemberWithUser {
  userId: string;
  email: string;
  role: MemberRole;
  createdAt: Date;
}

export const memberRepository = {
  async find(em: EntityManager, projectId: string, userId: string): Promise<ProjectMember | null> {
    return em.findOne(ProjectMemberSchema, { projectId, userId });
  },

  async listWithUsers(em: EntityManager, projectId: string): Promise<MemberWithUser[]> {
    const rows = await queryRows<{ user_id: string; email: string; role: MemberRole; created_at: TimestampText }>(
      em,
      `select m.user_id, u.email, m.role, m.created_at from project_members m join users u on u.id = m.user_id
       where m.project_id = ? order by m.created_at asc, u.email asc`,
      [projectId],
    );
    return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, createdAt: new Date(r.created_at) }));
  },

  /** How many members the project has, and how many of them are OWNER and ADMIN. */
  async roleCounts(em: EntityManager, projectId: string): Promise<{ total: number; owners: number; admins: number }> {
    const [counts] = await em.execute<Array<{ total: number; owners: number; admins: number }>>(
      `select count(*)::int as total,
              count(*) filter (where role = 'OWNER')::int as owners,
              count(*) filter (where role = 'ADMIN')::int as admins
       from project_members where project_id = ?`,
      [projectId],
    );
    return counts;
  },

  async countOwners(em: EntityManager, projectId: string): Promise<number> {
    return em.count(ProjectMemberSchema, { projectId, role: 'OWNER' });
  },

  /** Adds a member; null when the user already is one. */
  async add(em: EntityManager, projectId: string, userId: string, role: MemberRole): Promise<{ createdAt: Date } | null> {
    const rows = await queryRows<{ created_at: TimestampText }>(
      em,
      `insert into project_members (project_id, user_id, role) values (?, ?, ?) on conflict do nothing returning created_at`,
      [projectId, userId, role],
    );
    return rows.length ? { createdAt: new Date(rows[0].created_at) } : null;
  },

  /** Locks the project's owners (in a transaction) so two concurrent demotions or removals cannot leave it ownerless. */
  async lockOwners(em: EntityManager, projectId: string): Promise<void> {
    await em.execute(`select 1 from project_members where project_id = ? and role = 'OWNER' for update`, [projectId]);
  },

  async setRole(em: EntityManager, projectId: string, userId: string, role: MemberRole): Promise<void> {
    await em.execute(`update project_members set role = ? where project_id = ? and user_id = ?`, [role, projectId, userId]);
  },

  async remove(em: EntityManager, projectId: string, userId: string): Promise<void> {
    await em.execute(`delete from project_members where project_id = ? and user_id = ?`, [projectId, userId]);
  },
};
