import Router from '@koa/router';
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
import { projectBody, projectPatchBody } from '../schemas/projectSchemas';

/** The signed-in user and the projects they belong to (dashboard session). */
export function userRoutes(deps: ApiDeps) {
  const { config } = deps;
  const router = new Router<AppState>();
  router.use('/users', requireUser(config));

  router.get('/users/@me', async (ctx) => {
    ctx.body = serializeUser(ctx.state.user!);
  });

  router.get('/users/@me/projects', async (ctx) => {
    const memberships = await projectRepository.listForUser(ctx.state.em, ctx.state.user!.id);
    ctx.body = memberships.map(({ project, role }) => serializeProject(project, { role }));
  });

  router.post('/users/@me/projects', async (ctx) => {
    const { name } = parseBody(projectBody, ctx.request.body);
    const { project, secretKey } = await projectRepository.createWithOwner(ctx.state.em, name, ctx.state.user!.id);
    ctx.status = 201;
    ctx.body = { ...serializeProject(project, { role: 'OWNER' }), secretKey };
  });

  router.patch('/users/@me/projects/:id', async (ctx) => {
    const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
    const { name, campaignRatePerSecond } = parseBody(projectPatchBody, ctx.request.body);
    if (name !== undefined) project.name = name;
    if (campaignRatePerSecond !== undefined) project.campaignRatePerSecond = campaignRatePerSecond;
    await ctx.state.em.flush();
    ctx.body = serializeProject(project);
  });

  router.delete('/users/@me/projects/:id', async (ctx) => {
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
  });

  router.post('/users/@me/projects/:id/regenerate-keys', async (ctx) => {
    const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
    const keys = await projectRepository.regenerateKeys(ctx.state.em, project.id);
    if (!keys) throw notFound('project', project.id);
    ctx.body = keys;
  });

  // A leaked webhook secret is replaced here; receivers must switch to the new one (see the README).
  router.post('/users/@me/projects/:id/regenerate-webhook-secret', async (ctx) => {
    const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER', 'ADMIN']);
    const webhookSecret = await webhookSecretRepository.rotate(ctx.state.em, project.id);
    if (!webhookSecret) throw notFound('project', project.id);
    ctx.body = { webhookSecret };
  });

  router.get('/users/@me/projects/:id/security', async (ctx) => {
    const { project, role } = await requireProjectRole(ctx, ctx.params.id);
    ctx.body = await projectSecurity(ctx.state.em, config, project, role);
  });

  router.post('/users/@me/projects/:id/reset', async (ctx) => {
    const { project } = await requireProjectRole(ctx, ctx.params.id, ['OWNER']);
    const deleted = await projectDataRepository.wipe(ctx.state.em, project.id);
    ctx.body = { success: true, projectId: project.id, deleted };
  });

  return router;
}
