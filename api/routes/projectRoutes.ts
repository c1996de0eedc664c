import Router from '@koa/router';
import type { z } from 'zod';
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
import {
  addMemberBody,
  memberListResponse,
  memberResponse,
  projectSecurityResponse,
  projectSetupStateResponse,
  updateMemberBody,
} from '../schemas/projectSchemas';
import { describedRoutes } from '../openapi/describedRouter';

const exampleMember = { userId: '3f1c7a52-8d4e-4b7a-9c1d-2e5f6a7b8c9d', email: 'ada@example.com', role: 'ADMIN', createdAt: '2026-11-27T16:22:47.123Z' };

/** Team management and project overviews for members (dashboard session). */
export function projectRoutes(deps: ApiDeps) {
  const { config } = deps;
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Projects', access: 'session' });
  router.use('/projects', requireUser(config));

  route.get(
    '/projects/:id/members',
    {
      summary: 'List a project’s members',
      description: 'Any member may list them; oldest first.',
      responses: { 200: { description: 'The members', schema: memberListResponse, example: [exampleMember] } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id);
      const members = await memberRepository.listWithUsers(ctx.state.em, project.id);
      ctx.body = members.map((m) => ({ userId: m.userId, email: m.email, role: m.role, createdAt: m.createdAt }) satisfies z.input<typeof memberResponse>);
    },
  );

  // Members are existing Mailroom accounts, added by their email address.
  route.post(
    '/projects/:id/members',
    {
      summary: 'Add a member',
      description:
        'Adds an existing Mailroom account by its email address (404 when none uses it; 409 when already a member). ' +
        'OWNER or ADMIN; only an OWNER may add another OWNER. The role defaults to MEMBER.',
      body: { schema: addMemberBody, example: { email: 'ada@example.com', role: 'ADMIN' } },
      responses: { 201: { description: 'The new member', schema: memberResponse, example: exampleMember } },
    },
    async (ctx) => {
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
      ctx.body = { userId: user.id, email: user.email, role: body.role, createdAt: added.createdAt } satisfies z.input<typeof memberResponse>;
    },
  );

  route.patch(
    '/projects/:id/members/:userId',
    {
      summary: 'Change a member’s role',
      description: 'OWNER or ADMIN; only an OWNER may grant or change the OWNER role. 409 when it would leave the project without an OWNER.',
      body: { schema: updateMemberBody, example: { role: 'MEMBER' } },
      responses: { 200: { description: 'The member', schema: memberResponse } },
    },
    async (ctx) => {
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
      // Accounts are never deleted, so a member's user is always found.
      const user = await userRepository.findById(em, member.userId);
      if (!user) throw notFound('member', ctx.params.userId);
      ctx.body = { userId: member.userId, email: user.email, role: body.role, createdAt: member.createdAt } satisfies z.input<typeof memberResponse>;
    },
  );

  route.delete(
    '/projects/:id/members/:userId',
    {
      summary: 'Remove a member',
      description:
        'OWNER or ADMIN, or any member removing themselves (leaving). Only an OWNER may remove an OWNER; ' +
        '409 when it would leave the project without an OWNER.',
      responses: { 204: { description: 'Removed' } },
    },
    async (ctx) => {
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
    },
  );

  route.get(
    '/projects/:id/setup-state',
    {
      summary: 'Get a project’s setup checklist',
      description: 'Each onboarding step done or not, computed from what exists. With billing on (STRIPE_SECRET_KEY) the checklist adds `subscriptionActive`.',
      responses: { 200: { description: 'The checklist', schema: projectSetupStateResponse } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id);
      ctx.body = (await projectSetupState(ctx.state.em, project, ctx.state.user!, { billing: Boolean(config.stripe) })) satisfies z.input<
        typeof projectSetupStateResponse
      >;
    },
  );

  route.get(
    '/projects/:id/security',
    {
      summary: 'Get a project’s security overview',
      description: 'The same overview as GET /users/@me/projects/{id}/security.',
      responses: { 200: { description: 'The overview', schema: projectSecurityResponse } },
    },
    async (ctx) => {
      const { project, role: myRole } = await requireProjectRole(ctx, ctx.params.id);
      ctx.body = (await projectSecurity(ctx.state.em, config, project, myRole)) satisfies z.input<typeof projectSecurityResponse>;
    },
  );

  return router;
}
