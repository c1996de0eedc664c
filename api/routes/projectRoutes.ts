import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { ApiError, conflict, forbidden, notFound } from '../../lib/errors';
import { isUuid, parseBody } from '../http/validation';
import { requireUser } from '../auth/session';
import { requireProjectRole } from '../auth/projectAccess';
import { memberRepository } from '../../db/repositories/memberRepository';
import { userRepository } from '../../db/repositories/userRepository';
import { memberRoles } from '../../db/entities/projectMember';
import { projectSecurity } from '../../services/projects/projectSecurity';
import { projectSetupState } from '../../services/projects/projectSetupState';
import { addMemberBody, updateMemberBody } from '../schemas/projectSchemas';

/** Team management and project overviews for members (dashboard session). */
export function projectRoutes(deps: ApiDeps) {
  const { config } = deps;
  const router = new Router<AppState>();
  router.use('/projects', requireUser(config));

  router.get('/projects/:id/members', async (ctx) => {
    const { project } = await requireProjectRole(ctx, ctx.params.id);
    const rows = await memberRepository.listWithUsers(ctx.state.em, project.id);
    ctx.body = rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, createdAt: r.created_at }));
  });

  // Members are existing Mailroom accounts, added by their email address.
  router.post('/projects/:id/members', async (ctx) => {
    const { project, role: myRole } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
    const body = parseBody(addMemberBody, ctx.request.body);
    if (body.role === 'OWNER' && myRole !== 'OWNER') throw forbidden('Only an OWNER can add another OWNER');
    const user = await userRepository.findByEmail(ctx.state.em, body.email);
    if (!user) {
      throw new ApiError(404, 'RESOURCE_NOT_FOUND', `No Mailroom account uses ${body.email}; they need to sign up first`, {
        details: { resource: 'user', id: body.email },
      });
    }
    const added = await memberRepository.add(ctx.state.em, project.id, user.id, body.role);
    if (!added) throw conflict(`${body.email} is already a member of this project`);
    ctx.status = 201;
    ctx.body = { userId: user.id, email: user.email, role: body.role, createdAt: added.createdAt };
  });

  router.patch('/projects/:id/members/:userId', async (ctx) => {
    const { project, role: myRole } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
    const body = parseBody(updateMemberBody, ctx.request.body);
    const em = ctx.state.em;
    const member = isUuid(ctx.params.userId) ? await memberRepository.find(em, project.id, ctx.params.userId) : null;
    if (!member) throw notFound('member', ctx.params.userId);
    if ((member.role === 'OWNER' || body.role === 'OWNER') && myRole !== 'OWNER') throw forbidden('Only an OWNER can grant or change the OWNER role');
    await em.transactional(async (tx) => {
      // Lock the project's owners so two concurrent demotions cannot leave it ownerless.
      await memberRepository.lockOwners(tx, project.id);
      if (member.role === 'OWNER' && body.role !== 'OWNER' && (await memberRepository.countOwners(tx, project.id)) <= 1) {
        throw conflict('A project needs at least one OWNER; make someone else OWNER first');
      }
      await memberRepository.setRole(tx, project.id, member.userId, body.role);
    });
    const user = await userRepository.findById(em, member.userId);
    ctx.body = { userId: member.userId, email: user?.email, role: body.role, createdAt: member.createdAt };
  });

  router.delete('/projects/:id/members/:userId', async (ctx) => {
    const me = ctx.state.user!;
    const leaving = ctx.params.userId === me.id;
    const { project, role: myRole } = await requireProjectRole(ctx, ctx.params.id, leaving ? memberRoles : ['OWNER', 'ADMIN']);
    const em = ctx.state.em;
    const member = isUuid(ctx.params.userId) ? await memberRepository.find(em, project.id, ctx.params.userId) : null;
    if (!member) throw notFound('member', ctx.params.userId);
    if (member.role === 'OWNER' && myRole !== 'OWNER') throw forbidden('Only an OWNER can remove an OWNER');
    await em.transactional(async (tx) => {
      await memberRepository.lockOwners(tx, project.id);
      if (member.role === 'OWNER' && (await memberRepository.countOwners(tx, project.id)) <= 1) {
        throw conflict('A project needs at least one OWNER; make someone else OWNER first, or delete the project');
      }
      await memberRepository.remove(tx, project.id, member.userId);
    });
    ctx.status = 204;
  });

  router.get('/projects/:id/setup-state', async (ctx) => {
    const { project } = await requireProjectRole(ctx, ctx.params.id);
    ctx.body = await projectSetupState(ctx.state.em, project, ctx.state.user!, { billing: Boolean(config.stripe) });
  });

  router.get('/projects/:id/security', async (ctx) => {
    const { project, role: myRole } = await requireProjectRole(ctx, ctx.params.id);
    ctx.body = await projectSecurity(ctx.state.em, config, project, myRole);
  });

  return router;
}
