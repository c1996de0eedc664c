import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, notFound } from '../../lib/errors';
import { isUuid, parseBody, parseQuery, toFieldErrors } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { campaignRepository, type CampaignRow } from '../../db/campaigns/campaignRepository';
import { serializeCampaign } from '../presenters/campaignPresenter';
import {
  CAMPAIGN_LIMITS,
  campaignAudienceCountBody,
  campaignAudienceCountResponse,
  campaignCancelResponse,
  campaignCreatedResponse,
  campaignListQuery,
  campaignListResponse,
  campaignResponse,
  campaignSendResponse,
  campaignStatsResponse,
  campaignTestResponse,
  createCampaignBody,
  sendCampaignBody,
  testCampaignBody,
  updateCampaignBody,
} from '../schemas/campaignSchemas';
import { cancelCampaignSend, sendCampaign } from '../../services/campaigns/campaignSending';
import { createCampaign, deleteCampaign, updateCampaign } from '../../services/campaigns/campaignEditing';
import { sendCampaignTest } from '../../services/campaigns/campaignTestSend';
import { campaignStats } from '../../services/campaigns/campaignStats';
import { countAudience } from '../../services/campaigns/campaignAudienceCount';
import { WorkflowStartError } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';
import { describedRoutes } from '../openapi/describedRouter';

/** The reference's example of a campaign's fields as sent, and of the campaign answered. */
const CAMPAIGN_CREATE_EXAMPLE = {
  name: 'May newsletter',
  subject: 'What is new in May, {{firstName}}',
  body: '<p>Hello {{firstName}},</p><p>Here is what changed this month.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
  from: 'news@example.com',
  fromName: 'Example News',
  audienceType: 'SEGMENT',
  segmentId: '5b0f8f52-2a6e-4f0b-9d0c-3f5e2c1a7b10',
};

const CAMPAIGN_EXAMPLE = {
  id: '0d7a4c9e-8b1f-4c3a-9e2d-6f5b4a3c2d1e',
  name: 'May newsletter',
  description: null,
  subject: 'What is new in May, {{firstName}}',
  body: '<p>Hello {{firstName}},</p><p>Here is what changed this month.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
  from: 'news@example.com',
  fromName: 'Example News',
  replyTo: null,
  type: 'MARKETING',
  status: 'DRAFT',
  audienceType: 'SEGMENT',
  segmentId: '5b0f8f52-2a6e-4f0b-9d0c-3f5e2c1a7b10',
  audienceCondition: null,
  scheduledFor: null,
  totalRecipients: 0,
  sentCount: 0,
  deliveredCount: 0,
  openedCount: 0,
  clickedCount: 0,
  bouncedCount: 0,
  projectId: '9c1e2d3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f',
  sentAt: null,
  cancelledAt: null,
  stopReason: null,
  createdAt: '2030-04-28T10:15:00.000Z',
  updatedAt: '2030-04-28T10:15:00.000Z',
} satisfies z.input<typeof campaignResponse>;

/** Campaigns (specification "Campaigns (S)", contract section 11), secret key. */
export function campaignRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.use('/campaigns', ...keyAuthenticated('secret', deps));
  const route = describedRoutes(router, { tag: 'Campaigns', access: 'secret' });

  /** A non-uuid id cannot name a campaign: 404 like any other unknown id. */
  async function loadCampaign(ctx: AppContext): Promise<CampaignRow> {
    const id = ctx.params.id;
    const campaign = isUuid(id) ? await campaignRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!campaign) throw notFound('campaign', id);
    return campaign;
  }

  route.get(
    '/campaigns',
    {
      summary: 'List campaigns',
      description: 'Offset pages, newest first unless `sort` and `dir` say otherwise; `pageSize` above 100 is read as 100.',
      query: campaignListQuery,
      responses: { 200: { description: 'A page of campaigns', schema: campaignListResponse } },
    },
    async (ctx) => {
      const q = parseQuery(campaignListQuery, ctx.query);
      const { campaigns, total } = await campaignRepository.list(ctx.state.em, ctx.state.project!.id, {
        page: q.page,
        pageSize: q.pageSize,
        status: q.status,
        search: q.search?.trim() || undefined,
        sort: q.sort,
        dir: q.dir,
      });
      ctx.body = {
        data: campaigns.map(serializeCampaign),
        page: q.page,
        pageSize: q.pageSize,
        total,
        totalPages: Math.ceil(total / q.pageSize),
      } satisfies z.input<typeof campaignListResponse>;
    },
  );

  route.post(
    '/campaigns',
    {
      summary: 'Create a campaign',
      description:
        'A DRAFT. `from` must be covered by a verified sender domain (403 otherwise); the subject and body must compile as templates (422). ' +
        'The audience: ALL contacts, a SEGMENT (`segmentId`), or FILTERED contacts (`audienceCondition`, a condition tree).',
      body: { schema: createCampaignBody, example: CAMPAIGN_CREATE_EXAMPLE },
      responses: { 201: { description: 'The campaign, a DRAFT', schema: campaignCreatedResponse, example: { success: true, data: CAMPAIGN_EXAMPLE } } },
    },
    async (ctx) => {
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
      ctx.body = { success: true, data: serializeCampaign(campaign) } satisfies z.input<typeof campaignCreatedResponse>;
    },
  );

  route.post(
    '/campaigns/audience/count',
    {
      summary: 'Count an audience’s recipients',
      description:
        'How many contacts a campaign of this `type` and audience would be sent to if sent now (the `totalRecipients` its send would fix), ' +
        'to show while an audience is chosen, before anything is saved. The audience fields and their rules are those of `POST /campaigns` ' +
        '(422 when missing or invalid, 404 for an unknown segment). Suppressed addresses are counted: their emails are recorded as SUPPRESSED at send time.',
      body: { schema: campaignAudienceCountBody, example: { type: 'MARKETING', audienceType: 'SEGMENT', segmentId: CAMPAIGN_CREATE_EXAMPLE.segmentId } },
      responses: {
        200: { description: 'The number of recipients', schema: campaignAudienceCountResponse, example: { success: true, data: { recipients: 1250 } } },
      },
    },
    async (ctx) => {
      const body = parseBody(campaignAudienceCountBody, ctx.request.body);
      const recipients = await countAudience(ctx.state.em, ctx.state.project!.id, {
        type: body.type,
        audienceType: body.audienceType,
        segmentId: body.segmentId ?? null,
        audienceCondition: body.audienceCondition ?? null,
      });
      ctx.body = { success: true, data: { recipients } } satisfies z.input<typeof campaignAudienceCountResponse>;
    },
  );

  route.get(
    '/campaigns/:id',
    {
      summary: 'Get a campaign',
      responses: { 200: { description: 'The campaign, its counts following delivery feedback', schema: campaignResponse, example: CAMPAIGN_EXAMPLE } },
    },
    async (ctx) => {
      ctx.body = serializeCampaign(await loadCampaign(ctx));
    },
  );

  // Replaces the fields given and keeps the others; allowed in DRAFT and SCHEDULED only.
  route.put(
    '/campaigns/:id',
    {
      summary: 'Update a campaign',
      description: 'Replaces the fields given and keeps the others; only a DRAFT or SCHEDULED campaign can be edited (400 otherwise).',
      body: { schema: updateCampaignBody },
      responses: { 200: { description: 'The campaign as updated', schema: campaignResponse } },
    },
    async (ctx) => {
      const campaign = await loadCampaign(ctx);
      const updated = await updateCampaign(deps, ctx.state.em, campaign, () => parseBody(updateCampaignBody, ctx.request.body));
      ctx.body = serializeCampaign(updated);
    },
  );

  route.delete(
    '/campaigns/:id',
    {
      summary: 'Delete a campaign',
      description: 'Refused (409) while it is SCHEDULED or SENDING: cancel it first.',
      responses: { 204: { description: 'Deleted' } },
    },
    async (ctx) => {
      const id = ctx.params.id;
      if (!isUuid(id)) throw notFound('campaign', id);
      await deleteCampaign(ctx.state.em, ctx.state.project!.id, id);
      ctx.status = 204;
    },
  );

  route.post(
    '/campaigns/:id/duplicate',
    {
      summary: 'Duplicate a campaign',
      description: 'A DRAFT with the campaign’s content and audience, named `<name> (copy)`.',
      responses: { 201: { description: 'The copy', schema: campaignResponse } },
    },
    async (ctx) => {
      const campaign = await loadCampaign(ctx);
      const copy = await campaignRepository.duplicate(ctx.state.em, campaign.projectId, campaign.id, CAMPAIGN_LIMITS.name);
      if (!copy) throw notFound('campaign', campaign.id);
      ctx.status = 201;
      ctx.body = serializeCampaign(copy);
    },
  );

  route.post(
    '/campaigns/:id/send',
    {
      summary: 'Send or schedule a campaign',
      description:
        'A DRAFT starts sending now, or at `scheduledFor` (SCHEDULED) when that is in the future. Its sender domain must still be verified (403). ' +
        'A `scheduledFor` that is not a date is a 400; 503 when the send could not be started (the campaign stays a DRAFT; try again).',
      body: { schema: sendCampaignBody, required: false, example: { scheduledFor: '2030-05-01T09:00:00.000Z' } },
      responses: {
        200: {
          description: 'Sending, or scheduled',
          schema: campaignSendResponse,
          example: {
            success: true,
            data: { id: CAMPAIGN_EXAMPLE.id, name: CAMPAIGN_EXAMPLE.name, status: 'SCHEDULED', scheduledFor: '2030-05-01T09:00:00.000Z' },
            message: 'Campaign scheduled for 2030-05-01T09:00:00.000Z',
          },
        },
      },
    },
    async (ctx) => {
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
      } satisfies z.input<typeof campaignSendResponse>;
    },
  );

  route.post(
    '/campaigns/:id/cancel',
    {
      summary: 'Cancel a campaign',
      description: 'Stops a SCHEDULED or SENDING campaign; mail already handed over stays sent.',
      responses: { 200: { description: 'Cancelled', schema: campaignCancelResponse } },
    },
    async (ctx) => {
      const campaign = await loadCampaign(ctx);
      const cancelled = await cancelCampaignSend(deps, ctx.state.em, campaign);
      ctx.body = { success: true, data: cancelled, message: 'Campaign cancelled' } satisfies z.input<typeof campaignCancelResponse>;
    },
  );

  /** One rendered copy to one address, subject `[TEST] …`, counted nowhere (services/campaigns/campaignTestSend.ts). */
  route.post(
    '/campaigns/:id/test',
    {
      summary: 'Send a test email',
      description:
        'One copy rendered for one address (with that contact’s data, if it is one), subject `[TEST] …`. It counts in no statistics and no contact’s history.',
      body: { schema: testCampaignBody, example: { email: 'ada@example.com' } },
      responses: { 200: { description: 'The test email was recorded and queued', schema: campaignTestResponse } },
    },
    async (ctx) => {
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
      ctx.body = {
        success: true,
        data: { email: sent.emailId, to: sent.to, subject: sent.subject },
        message: `Test email sent to ${sent.to}`,
      } satisfies z.input<typeof campaignTestResponse>;
    },
  );

  route.get(
    '/campaigns/:id/stats',
    {
      summary: 'Get a campaign’s statistics',
      description: 'Counts from the campaign’s emails, following delivery feedback as it arrives; rates are percent of `sentCount`.',
      responses: { 200: { description: 'The counts and rates', schema: campaignStatsResponse } },
    },
    async (ctx) => {
      const campaign = await loadCampaign(ctx);
      ctx.body = { success: true, data: await campaignStats(ctx.state.em, campaign) } satisfies z.input<typeof campaignStatsResponse>;
    },
  );

  return router;
}
