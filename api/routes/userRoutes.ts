import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { parseBody } from '../http/validation';
import { requireUser } from '../auth/session';
import { requireProjectRole } from '../auth/projectAccess';
import { projectRepository } from '../../db/repositories/projectRepository';
import { serializeProject } from '../presenters/projectPresenter';
import { projectDataRepository } from '../../db/repositories/projectDataRepository';
import { webhookSecretRepository } from '../../db/repositories/webhookSecretRepository';
import { serializeUser } from './authRoutes';
import { projectSecurity } from '../../services/projects/projectSecurity';
import { uploadRepository } from '../../db/uploads/uploadRepository';
import {
  createdProjectResponse,
  projectBody,
  projectKeysResponse,
  projectMembershipListResponse,
  projectMembershipResponse,
  projectPatchBody,
  projectResetResponse,
  projectResponse,
  projectSecurityResponse,
  webhookSecretResponse,
} from '../schemas/projectSchemas';
import { userResponse } from '../schemas/authSchemas';
import { describedRoutes } from '../openapi/describedRouter';

const exampleProject = {
  id: '6b0e2a4c-1f3d-4e5a-8b7c-9d0e1f2a3b4c',
  name: 'Newsletter',
  publicKey: 'pk_4f2a9c0e1b3d5f7a9c1e3b5d7f9a1c3e',
  secretKeyHint: 'sk_…3f9a',
  disabled: false,
  disabledReason: null,
  campaignRatePerSecond: null,
  keysRotatedAt: null,
  createdAt: '2026-11-27T16:22:47.123Z',
  updatedAt: '2026-11-27T16:22:47.123Z',
};

/** The signed-in user and the projects they belong to (dashboard session). */
export function userRoutes(deps: ApiDeps) {
  const { config } = deps;
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Account', access: 'session' });
  router.use('/users', requireUser(config));

  route.get('/users/@me', { summary: 'Get the signed-in user', responses: { 200: { description: 'The user', schema: userResponse } } }, async (ctx) => {
    ctx.body = serializeUser(ctx.state.user!);
  });

  route.get(
    '/users/@me/projects',
    {
      summary: 'List my projects',
      description: 'The projects the signed-in user is a member of, with their role in each, oldest membership first.',
      responses: {
        200: { description: 'The projects', schema: projectMembershipListResponse, example: [{ ...exampleProject, role: 'OWNER' }] },
      },
    },
    async (ctx) => {
      const memberships = await projectRepository.listForUser(ctx.state.em, ctx.state.user!.id);
      ctx.body = memberships.map(({ project, role }) => ({ ...serializeProject(project), role }) satisfies z.input<typeof projectMembershipResponse>);
    },
  );

  route.post(
    '/users/@me/projects',
    {
      summary: 'Create a project',
      description: 'The signed-in user becomes its OWNER. The answer carries the secret key, shown this once.',
      body: { schema: projectBody, example: { name: 'Newsletter' } },
      responses: {
        201: {
          description: 'The project, with its secret key',
          schema: createdProjectResponse,
          example: { ...exampleProject, role: 'OWNER', secretKey: 'sk_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b' },
        },
      },
    },
    async (ctx) => {
      const { name } = parseBody(projectBody, ctx.request.body);
      const { project, secretKey } = await projectRepository.createWithOwner(ctx.state.em, name, ctx.state.user!.id);
      ctx.status = 201;
      ctx.body = { ...serializeProject(project), role: 'OWNER', secretKey } satisfies z.input<typeof createdProjectResponse>;
    },
  );

  route.patch(
    '/users/@me/projects/:id',
    {
      summary: 'Update a project',
      description: 'Its name, and its cap on campaign mail per second (null lifts it). OWNER or ADMIN.',
      body: { schema: projectPatchBody, example: { name: 'Newsletter', campaignRatePerSecond: 50 } },
      responses: { 200: { description: 'The project', schema: projectResponse } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const { name, campaignRatePerSecond } = parseBody(projectPatchBody, ctx.request.body);
      if (name !== undefined) project.name = name;
      if (campaignRatePerSecond !== undefined) project.campaignRatePerSecond = campaignRatePerSecond;
      await ctx.state.em.flush();
      ctx.body = serializeProject(project);
    },
  );

  route.delete(
    '/users/@me/projects/:id',
    {
      summary: 'Delete a project',
      description: 'Deletes the project and all its data, uploads included. OWNER only.',
      responses: { 204: { description: 'Deleted' } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER']);
      // Every project table references projects with ON DELETE CASCADE.
      const uploadKeys = await uploadRepository.keysOfProject(ctx.state.em, project.id);
      await projectRepository.delete(ctx.state.em, project.id);
      // The uploads' rows went with the project, so their files are no longer served; removing the
      // files only frees the space, and a failure is logged rather than undoing the deletion.
      await deps.objectStore
        .delete(uploadKeys)
        .catch((err) => deps.logger.warn({ err, projectId: project.id, files: uploadKeys.length }, 'could not remove the uploaded files of a deleted project'));
      ctx.status = 204;
    },
  );

  route.post(
    '/users/@me/projects/:id/regenerate-keys',
    {
      summary: 'Replace the API keys',
      description: 'A new public and secret key replace the old ones at once; the secret key is shown this once. OWNER or ADMIN.',
      responses: { 200: { description: 'The new keys', schema: projectKeysResponse } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const keys = await projectRepository.regenerateKeys(ctx.state.em, project.id);
      if (!keys) throw notFound('project', project.id);
      ctx.body = keys satisfies z.input<typeof projectKeysResponse>;
    },
  );

  // A leaked webhook secret is replaced here; receivers must switch to the new one (see the README).
  route.post(
    '/users/@me/projects/:id/regenerate-webhook-secret',
    {
      summary: 'Replace the webhook signing secret',
      description: 'Requests signed from then on carry the new secret; receivers must switch to it. OWNER or ADMIN.',
      responses: { 200: { description: 'The new secret', schema: webhookSecretResponse } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
      const webhookSecret = await webhookSecretRepository.rotate(ctx.state.em, project.id);
      if (!webhookSecret) throw notFound('project', project.id);
      ctx.body = { webhookSecret } satisfies z.input<typeof webhookSecretResponse>;
    },
  );

  route.get(
    '/users/@me/projects/:id/security',
    {
      summary: 'Get a project’s security overview',
      description: 'Its keys (never the secret key itself), who has access, and its limits. The webhook signing secret is shown to OWNER and ADMIN only.',
      responses: { 200: { description: 'The overview', schema: projectSecurityResponse } },
    },
    async (ctx) => {
      const { project, role } = await requireProjectRole(ctx, ctx.params.id);
      ctx.body = (await projectSecurity(ctx.state.em, config, project, role)) satisfies z.input<typeof projectSecurityResponse>;
    },
  );

  route.post(
    '/users/@me/projects/:id/reset',
    {
      summary: 'Delete a project’s data',
      description:
        'Deletes the project’s data (contacts, emails, events, campaigns, segments, jobs, executions, analytics) in one transaction. ' +
        'The set-up stays: the project, its members and keys, sender domains, templates, workflows, uploads and billing. OWNER only.',
      responses: { 200: { description: 'How many rows went, per table', schema: projectResetResponse } },
    },
    async (ctx) => {
      const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER']);
      const deleted = await projectDataRepository.wipe(ctx.state.em, project.id);
      ctx.body = { success: true, projectId: project.id, deleted } satisfies z.input<typeof projectResetResponse>;
    },
  );

  return router;
}
