import Koa from 'koa';
import type { ApiDeps, AppState } from './state';
import { requestId } from './middleware/requestId';
import { requestLog } from './middleware/requestLog';
import { errorHandler } from './middleware/errorHandler';
import { rejectNulCharacters } from './middleware/rejectNulCharacters';
import { jsonBody, JSON_BODY_LIMIT_BYTES } from './middleware/jsonBody';
import { sendRoutes } from './routes/sendRoutes';
import { healthRoutes } from './routes/healthRoutes';
import { configRoutes } from './routes/configRoutes';
import { authRoutes } from './routes/authRoutes';
import { userRoutes } from './routes/userRoutes';
import { projectRoutes } from './routes/projectRoutes';
import { outboxRoutes } from './routes/outboxRoutes';
import { contactRoutes } from './routes/contactRoutes';
import { contactJobRoutes } from './routes/contactJobRoutes';
import { trackRoutes } from './routes/eventTrackRoutes';
import { eventRoutes } from './routes/eventRoutes';
import { domainRoutes } from './routes/domainRoutes';
import { templateRoutes } from './routes/templateRoutes';
import { campaignRoutes } from './routes/campaignRoutes';
import { verifyRoutes } from './routes/verifyRoutes';
import { trackingRoutes } from './routes/emailTrackingRoutes';
import { subscriptionPages } from './routes/subscriptionPages';
import { snsWebhookRoutes } from './routes/snsWebhookRoutes';
import { segmentRoutes } from './routes/segmentRoutes';
import { uploadRoutes } from './routes/uploadRoutes';
import { workflowRoutes } from './routes/workflowRoutes';
import { billingRoutes } from './routes/billingRoutes';
import { stripeWebhookRoutes, STRIPE_WEBHOOK_PATH } from './routes/stripeWebhookRoutes';
import { workflowExecutionRoutes } from './routes/workflowExecutionRoutes';
import { forgetWorkflowTriggersAfterWrites } from './middleware/workflowTriggerCache';
import { activityRoutes } from './routes/activityRoutes';
import { analyticsRoutes } from './routes/analyticsRoutes';
import { emailRecordRoutes } from './routes/emailRecordRoutes';
import { suppressionRoutes } from './routes/suppressionRoutes';

export function createApp(deps: ApiDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.proxy = true;
  app.silent = true;

  app.use(requestId());
  app.use(requestLog(deps.logger));
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

  for (const router of [
    healthRoutes(deps),
    configRoutes(deps),
    authRoutes(deps),
    userRoutes(deps),
    projectRoutes(deps),
    outboxRoutes(deps),
    trackRoutes(deps),
    sendRoutes(deps),
    eventRoutes(deps),
    domainRoutes(deps),
    templateRoutes(deps),
    campaignRoutes(deps),
    verifyRoutes(deps),
    trackingRoutes(deps),
    subscriptionPages(deps),
    snsWebhookRoutes(deps),
    segmentRoutes(deps),
    // Before the workflow definition routes, whose /workflows/:id/... would otherwise claim these.
    workflowExecutionRoutes(deps),
    workflowRoutes(deps),
    billingRoutes(deps),
    stripeWebhookRoutes(deps),
    activityRoutes(deps),
    analyticsRoutes(deps),
    emailRecordRoutes(deps),
    suppressionRoutes(deps),
    // Before contactRoutes, whose /contacts/:id would otherwise claim /contacts/import.
    contactJobRoutes(deps),
    contactRoutes(deps),
    uploadRoutes(deps),
  ]) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: true }));
  }
  return app;
}
