import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, notFound } from '../../lib/errors';
import { isUuid, parseBody, parseQuery, toFieldErrors } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { campaignRepository, type CampaignRow } from '../../db/campaigns/campaignRepository';
import { serializeCampaign } from '../presenters/campaignPresenter';
import { CAMPAIGN_LIMITS, campaignListQuery, createCampaignBody, sendCampaignBody, testCampaignBody, updateCampaignBody } from '../schemas/campaignSchemas';
import { cancelCampaignSend, sendCampaign } from '../../services/campaigns/campaignSending';
import { createCampaign, deleteCampaign, updateCampaign } from '../../services/campaigns/campaignEditing';
import { sendCampaignTest } from '../../services/campaigns/campaignTestSend';
import { campaignStats } from '../../services/campaigns/campaignStats';
import { WorkflowStartError } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';

/** Campaigns (specification "Campaigns (S)", contract section 11), secret key. */
export function campaignRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.use('/campaigns', ...keyAuthenticated('secret', deps));

  /** A non-uuid id cannot name a campaign: 404 like any other unknown id. */
  async function loadCampaign(ctx: AppContext): Promise<CampaignRow> {
    const id = ctx.params.id;
    const campaign = isUuid(id) ? await campaignRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!campaign) throw notFound('campaign', id);
    return campaign;
  }

  router.get('/campaigns', async (ctx) => {
    const q = parseQuery(campaignListQuery, ctx.query);
    const { campaigns, total } = await campaignRepository.list(ctx.state.em, ctx.state.project!.id, {
      page: q.page,
      pageSize: q.pageSize,
      status: q.status,
      search: q.search?.trim() || undefined,
      sort: q.sort,
      dir: q.dir,
    });
    ctx.body = { data: campaigns.map(serializeCampaign), page: q.page, pageSize: q.pageSize, total, totalPages: Math.ceil(total / q.pageSize) };
  });

  router.post('/campaigns', async (ctx) => {
    const body = parseBody(createCampaignBody, ctx.request.body);
    const campaign = await createCampaign(deps, ctx.state.em, ctx.state.project!.id, {
      ...body,
      description: body.description ?? null,
      fromName: body.fromName ?? null,
      replyTo: body.replyTo ?? null,
      segmentId: body.segmentId ?? null,
      audienceCondition: body.audienceCondition ?? null,
    });
    ctx.status = 201;
    ctx.body = { success: true, data: serializeCampaign(campaign) };
  });

  router.get('/campaigns/:id', async (ctx) => {
    ctx.body = serializeCampaign(await loadCampaign(ctx));
  });

  // Replaces the fields given and keeps the others; allowed in DRAFT and SCHEDULED only.
  router.put('/campaigns/:id', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    const updated = await updateCampaign(deps, ctx.state.em, campaign, () => parseBody(updateCampaignBody, ctx.request.body));
    ctx.body = serializeCampaign(updated);
  });

  router.delete('/campaigns/:id', async (ctx) => {
    const id = ctx.params.id;
    if (!isUuid(id)) throw notFound('campaign', id);
    await deleteCampaign(ctx.state.em, ctx.state.project!.id, id);
    ctx.status = 204;
  });

  router.post('/campaigns/:id/duplicate', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    const copy = await campaignRepository.duplicate(ctx.state.em, campaign.projectId, campaign.id, CAMPAIGN_LIMITS.name);
    if (!copy) throw notFound('campaign', campaign.id);
    ctx.status = 201;
    ctx.body = serializeCampaign(copy);
  });

  router.post('/campaigns/:id/send', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    // An unparseable date is a 400 (specification), not the 422 of other bodies.
    const parsed = sendCampaignBody.safeParse(ctx.request.body ?? {});
    if (!parsed.success) {
      const errors = toFieldErrors(parsed.error.issues);
      throw badRequest(errors.map((e) => e.message).join('; '), { errors });
    }
    let started;
    try {
      started = await sendCampaign(deps, ctx.state.em, campaign, parsed.data.scheduledFor ?? null);
    } catch (err) {
      if (err instanceof WorkflowStartError) throw workflowStartApiError(err, 'The campaign could not be started; it is still a draft. Try again shortly.');
      throw err;
    }
    ctx.body = {
      success: true,
      data: started,
      message: started.scheduledFor ? `Campaign scheduled for ${started.scheduledFor.toISOString()}` : 'Campaign is being sent',
    };
  });

  router.post('/campaigns/:id/cancel', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    const cancelled = await cancelCampaignSend(deps, ctx.state.em, campaign);
    ctx.body = { success: true, data: cancelled, message: 'Campaign cancelled' };
  });

  /** One rendered copy to one address, subject `[TEST] …`, counted nowhere (services/campaigns/campaignTestSend.ts). */
  router.post('/campaigns/:id/test', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    const { email: address } = parseBody(testCampaignBody, ctx.request.body);
    let sent;
    try {
      // A template that cannot render for this address's data is a 422 (the error handler's mapping).
      sent = await sendCampaignTest(deps, ctx.state.em, campaign, address);
    } catch (err) {
      if (err instanceof WorkflowStartError) throw workflowStartApiError(err, 'The test email could not be queued; nothing was sent. Try again shortly.');
      throw err;
    }
    ctx.body = { success: true, data: { email: sent.emailId, to: sent.to, subject: sent.subject }, message: `Test email sent to ${sent.to}` };
  });

  router.get('/campaigns/:id/stats', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    ctx.body = { success: true, data: await campaignStats(ctx.state.em, campaign) };
  });

  return router;
}
