import type { EntityManager } from '@mikro-orm/postgresql';
import { ProjectSchema, type Project } from '../entities/project';
import { ProjectMemberSchema, type MemberRole } from '../entities/projectMember';
import { generateApiKeyPair, sha256Hex } from '../../lib/crypto';
import { deleteContacts } from '../contacts/contactDeletion';

export interface ProjectWithSecret {
  project: Project;
  secretKey: string;
}

export const projectRepository = {
  /** Creates a project with a fresh key pair and makes `ownerId` its OWNER, in one transaction. */
  async createWithOwner(em: EntityManager, name: string, ownerId: string): Promise<ProjectWithSecret> {
    const keys = generateApiKeyPair();
    return em.transactional(async (tx) => {
      const project = tx.create(ProjectSchema, {
        name,
        publicKey: keys.publicKey,
        secretKeyHash: keys.secretKeyHash,
        secretKeyHint: keys.secretKeyHint,
      });
      await tx.flush();
      tx.create(ProjectMemberSchema, { projectId: project.id, userId: ownerId, role: 'OWNER' });
      await tx.flush();
      return { project, secretKey: keys.secretKey };
    });
  },

  /** New keys replace the old ones in the same statement: the old pair stops working at once. */
  async regenerateKeys(em: EntityManager, projectId: string): Promise<{ publicKey: string; secretKey: string } | null> {
    const keys = generateApiKeyPair();
    const rows = await em.execute(
      `update projects set public_key = ?, secret_key_hash = ?, secret_key_hint = ?, keys_rotated_at = now(), updated_at = now()
       where id = ? returning id`,
      [keys.publicKey, keys.secretKeyHash, keys.secretKeyHint, projectId],
    );
    return rows.length ? { publicKey: keys.publicKey, secretKey: keys.secretKey } : null;
  },

  // Every key-authenticated request starts here, so these two skip the query builder: one indexed
  // lookup, mapped onto the entity.
  async findByPublicKey(em: EntityManager, publicKey: string): Promise<Project | null> {
    const rows = await em.execute(`select * from projects where public_key = ?`, [publicKey]);
    return rows.length ? em.map(ProjectSchema, rows[0]) : null;
  },

  async findBySecretKey(em: EntityManager, secretKey: string): Promise<Project | null> {
    const rows = await em.execute(`select * from projects where secret_key_hash = ?`, [sha256Hex(secretKey)]);
    return rows.length ? em.map(ProjectSchema, rows[0]) : null;
  },

  async findById(em: EntityManager, id: string): Promise<Project | null> {
    return em.findOne(ProjectSchema, { id });
  },

  /** What the onboarding checklist counts (services/projects/projectSetupState.ts), in one statement. */
  async setupCounts(em: EntityManager, projectId: string): Promise<{ members: number; verifiedDomains: number; templates: boolean; sent: boolean }> {
    const [counts] = await em.execute<Array<{ members: number; verifiedDomains: number; templates: boolean; sent: boolean }>>(
      `select (select count(*)::int from project_members where project_id = ?) as members,
              (select count(*)::int from domains where project_id = ? and status = 'VERIFIED') as "verifiedDomains",
              exists (select 1 from templates where project_id = ?) as templates,
              -- Any email that left (or got further); a project's first send is a one-row lookup.
              exists (select 1 from emails where project_id = ? and sent_at is not null) as sent`,
      [projectId, projectId, projectId, projectId],
    );
    return counts;
  },

  /** Set when the project is disabled (its sends refused), with why; read from the row, not the identity map. */
  async disabledState(em: EntityManager, id: string): Promise<{ disabledReason: string | null } | null> {
    const rows = await em.execute<Array<{ disabled: boolean; disabled_reason: string | null }>>(`select disabled, disabled_reason from projects where id = ?`, [
      id,
    ]);
    return rows[0]?.disabled ? { disabledReason: rows[0].disabled_reason } : null;
  },

  /** The projects a user belongs to, with the user's role in each. */
  async listForUser(em: EntityManager, userId: string): Promise<Array<{ project: Project; role: MemberRole }>> {
    const memberships = await em.find(ProjectMemberSchema, { userId }, { orderBy: { createdAt: 'asc' } });
    if (!memberships.length) return [];
    const projects = await em.find(ProjectSchema, { id: { $in: memberships.map((m) => m.projectId) } });
    const byId = new Map(projects.map((p) => [p.id, p]));
    return memberships.flatMap((m) => (byId.has(m.projectId) ? [{ project: byId.get(m.projectId)!, role: m.role }] : []));
  },

  /**
   * Deletes a project; every project table references projects with ON DELETE CASCADE. Its
   * contacts go first, through deleteContacts (the contact deletion lock), in the same transaction.
   */
  async delete(em: EntityManager, projectId: string): Promise<void> {
    await em.transactional(async (tx) => {
      await deleteContacts(tx, projectId, 'all');
      await tx.nativeDelete(ProjectSchema, { id: projectId });
    });
  },
};
