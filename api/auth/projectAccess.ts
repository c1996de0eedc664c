import type { AppContext } from '../state';
import { forbidden, notFound } from '../../lib/errors';
import { isUuid } from '../http/validation';
import { memberRepository } from '../../db/repositories/memberRepository';
import { projectRepository } from '../../db/repositories/projectRepository';
import type { MemberRole } from '../../db/entities/projectMember';

/**
 * The signed-in user's access to project `projectId`. A project the user is not a member of
 * is reported as missing (404), exactly like one that does not exist; a member whose role is
 * not among `roles` gets 403.
 */
export async function requireProjectRole(ctx: AppContext, projectId: string, roles: readonly MemberRole[] = ['OWNER', 'ADMIN', 'MEMBER']) {
  const user = ctx.state.user!;
  const membership = isUuid(projectId) ? await memberRepository.find(ctx.state.em, projectId, user.id) : null;
  const project = membership ? await projectRepository.findById(ctx.state.em, projectId) : null;
  if (!membership || !project) throw notFound('project', projectId);
  if (!roles.includes(membership.role)) {
    throw forbidden(`This needs the ${roles.join(' or ')} role in the project; you are ${membership.role}`);
  }
  return { project, role: membership.role };
}
