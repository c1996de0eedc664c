import Koa from 'koa';
import type { ApiDeps, AppState } from './state';
import { requestId } from './middleware/requestId';
import { requestLog } from './middleware/requestLog';
import { errorHandler } from './middleware/errorHandler';
import { rejectNulCharacters } from './middleware/rejectNulCharacters';
import { jsonBody, JSON_BODY_LIMIT_BYTES } from './middleware/jsonBody';
import { STRIPE_WEBHOOK_PATH } from './routes/stripeWebhookRoutes';
import { forgetWorkflowTriggersAfterWrites } from './middleware/workflowTriggerCache';
import { apiRouters } from './routes';
import { apiDescriptionRoutes } from './routes/apiDescriptionRoutes';
import { routeDescriptions } from './openapi/describedRouter';
import { buildApiDocument, type ApiDocument } from './openapi/apiDocument';
import type Router from '@koa/router';
import { packageVersion } from '../lib/codeLocation';

export function createApp(deps: ApiDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.proxy = true;
  app.silent = true;

  app.use(requestId());
  app.use(requestLog(deps.logger, deps.requestLog));
  app.use(errorHandler(deps.logger));
  app.use(rejectNulCharacters());
  // A send carries its attachments as base64 (4/3 of their size) beside the rest of the message.
  const sendBodyLimit = Math.ceil((deps.config.attachmentsMaxBytes * 4) / 3) + 6 * 1024 * 1024;
  app.use(
    jsonBody({
      limitBytes: (ctx) => (ctx.path === '/v1/send' ? sendBodyLimit : JSON_BODY_LIMIT_BYTES),
      // Stripe's signature covers the exact bytes: its route reads the body itself.
      leaveUnread: (ctx) => ctx.path === STRIPE_WEBHOOK_PATH,
    }),
  );
  app.use(async (ctx, next) => {
    ctx.state.em = deps.orm.em.fork();
    await next();
  });
  app.use(forgetWorkflowTriggersAfterWrites());

  const { routers } = describedApi(deps);
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: true }));
  }
  return app;
}

/**
 * The API's routers in mounting order, and the OpenAPI document describing them (contract 19),
 * built before the first request so a route it cannot describe fails the start.
 * scripts/writeApiDescription.ts writes the same document to client/ for the typed client.
 */
export function describedApi(deps: ApiDeps): { routers: Router<AppState>[]; document: ApiDocument } {
  const routers = apiRouters(deps);
  const description: { document?: ApiDocument } = {};
  routers.push(apiDescriptionRoutes(() => description.document ?? {}));
  description.document = buildApiDocument(routers.flatMap(routeDescriptions), packageVersion());
  return { routers, document: description.document };
}
