import crypto from 'node:crypto';
import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, conflict, notFound, validationFailed, type FieldError } from '../../lib/errors';
import { isUuid, parseBody, parseQuery, toFieldErrors } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { unverifiedSenderDomain } from '../http/senderDomain';
import { contactRepository } from '../../db/contacts/contactRepository';
import { emailRepository } from '../../db/emails/emailRepository';
import { campaignRepository, EDITABLE_STATUSES, type CampaignFields, type CampaignRow } from '../../db/campaigns/campaignRepository';
import { serializeCampaign } from '../presenters/campaignPresenter';
import { CAMPAIGN_LIMITS, campaignListQuery, createCampaignBody, sendCampaignBody, testCampaignBody, updateCampaignBody } from '../schemas/campaignSchemas';
import { validateConditionTree } from '../../db/conditions';
import { cancelCampaignSend, notDraft, startCampaignSend } from '../../services/campaigns/campaignSending';
import { checkTemplate } from '../../mail/rendering/renderEmail';
import { composeEmail } from '../../services/sending/emailComposer';
import { WorkflowStartError } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';

/** A rate in percent of `sentCount`, two decimals; 0 when nothing was sent. */
const rate = (count: number, sent: number) => (sent > 0 ? Math.round((count / sent) * 10_000) / 100 : 0);

/** Campaigns (specification "Campaigns (S)", contract section 11), secret key. */
export function campaignRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const { config } = deps;
  router.use('/campaigns', ...keyAuthenticated('secret', deps));

  /** A non-uuid id cannot name a campaign: 404 like any other unknown id. */
  async function loadCampaign(ctx: AppContext): Promise<CampaignRow> {
    const id = ctx.params.id;
    const campaign = isUuid(id) ? await campaignRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!campaign) throw notFound('campaign', id);
    return campaign;
  }

  /**
   * Checks a campaign's fields as they will be stored (after a PUT, the merge of old and new):
   * audience fields against the audience type (422, the segment's absence 404), template syntax
   * (422 naming the field), and the sender-domain rule when `from` is new (403).
   */
  async function checkCampaign(ctx: AppContext, fields: CampaignFields, fromChanged: boolean): Promise<CampaignFields> {
    const projectId = ctx.state.project!.id;
    const problems: FieldError[] = [];
    const audience = { segmentId: null as string | null, audienceCondition: null as unknown };
    if (fields.audienceType === 'SEGMENT') {
      if (!fields.segmentId) problems.push({ field: 'segmentId', message: 'segmentId is required when audienceType is SEGMENT', code: 'invalid_type' });
      audience.segmentId = fields.segmentId;
    } else if (fields.audienceType === 'FILTERED') {
      if (fields.audienceCondition == null) {
        problems.push({ field: 'audienceCondition', message: 'audienceCondition is required when audienceType is FILTERED', code: 'invalid_type' });
      } else {
        problems.push(...(await validateConditionTree(ctx.state.em, projectId, fields.audienceCondition, { path: 'audienceCondition' })));
      }
      audience.audienceCondition = fields.audienceCondition;
    }
    for (const p of checkTemplate({ subject: fields.subject, body: fields.body })) problems.push({ field: p.field, message: p.message, code: 'custom' });
    if (problems.length) throw validationFailed(problems);

    if (audience.segmentId && !(await campaignRepository.segmentExists(ctx.state.em, projectId, audience.segmentId)))
      throw notFound('segment', audience.segmentId);
    if (fromChanged && !(await deps.senderDomains.findVerified(projectId, fields.from))) throw unverifiedSenderDomain(fields.from);
    // Only the audience type's own field is kept: ALL needs neither (specification).
    return { ...fields, ...audience };
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
    const fields = await checkCampaign(
      ctx,
      {
        ...body,
        description: body.description ?? null,
        fromName: body.fromName ?? null,
        replyTo: body.replyTo ?? null,
        segmentId: body.segmentId ?? null,
        audienceCondition: body.audienceCondition ?? null,
      },
      true,
    );
    const campaign = await campaignRepository.create(ctx.state.em, ctx.state.project!.id, fields);
    ctx.status = 201;
    ctx.body = { success: true, data: serializeCampaign(campaign) };
  });

  router.get('/campaigns/:id', async (ctx) => {
    ctx.body = serializeCampaign(await loadCampaign(ctx));
  });

  // Replaces the fields given and keeps the others; allowed in DRAFT and SCHEDULED only.
  router.put('/campaigns/:id', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    if (!EDITABLE_STATUSES.includes(campaign.status)) throw notDraft('edited', campaign.status);
    const changes = parseBody(updateCampaignBody, ctx.request.body);
    const given = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<CampaignFields>;
    const merged: CampaignFields = { ...campaign, ...given };
    const fields = await checkCampaign(ctx, merged, merged.from !== campaign.from);
    const updated = await campaignRepository.updateEditable(ctx.state.em, campaign.projectId, campaign.id, fields);
    if (!updated) {
      const current = await campaignRepository.findById(ctx.state.em, campaign.projectId, campaign.id);
      if (!current) throw notFound('campaign', campaign.id);
      throw notDraft('edited', current.status);
    }
    ctx.body = serializeCampaign(updated);
  });

  router.delete('/campaigns/:id', async (ctx) => {
    const id = ctx.params.id;
    const result = isUuid(id) ? await campaignRepository.deleteUnlessActive(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : 'missing';
    if (result === 'missing') throw notFound('campaign', id);
    if (result !== 'deleted') {
      throw conflict(`A ${result.active} campaign cannot be deleted; cancel it first (POST /campaigns/${id}/cancel)`, {
        resource: 'campaign',
        id,
        status: result.active,
      });
    }
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
    if (campaign.status !== 'DRAFT') throw notDraft('sent', campaign.status);
    // What was valid when the draft was saved may not be now: the domain lost, the segment deleted.
    if (!(await deps.senderDomains.findVerified(campaign.projectId, campaign.from))) throw unverifiedSenderDomain(campaign.from);
    if (campaign.audienceType === 'SEGMENT' && !campaign.segmentId) {
      throw validationFailed([
        { field: 'segmentId', message: "The campaign's segment was deleted; choose another audience with PUT before sending", code: 'invalid_type' },
      ]);
    }
    let started;
    try {
      started = await startCampaignSend(deps, ctx.state.em, campaign, parsed.data.scheduledFor ?? null);
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

  /**
   * One rendered copy to one address through the one send path, subject `[TEST] …`. It carries
   * no campaign id and no contact id, so it counts in no statistics and no contact's history,
   * and no contact is created. An address that is a contact is rendered with that contact's data
   * and links; any other address with empty data, its links naming no contact.
   */
  router.post('/campaigns/:id/test', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    const { email: address } = parseBody(testCampaignBody, ctx.request.body);
    const projectId = campaign.projectId;
    const sender = await deps.senderDomains.findVerified(projectId, campaign.from);
    if (!sender) throw unverifiedSenderDomain(campaign.from);
    const suppressed = await emailRepository.suppressedAddresses(ctx.state.em, projectId, [address]);
    if (suppressed.size) {
      throw validationFailed([
        { field: 'email', message: `${address} is suppressed after a hard bounce or a complaint; no mail is sent to it`, code: 'custom' },
      ]);
    }

    const contact = await contactRepository.findByEmail(ctx.state.em, projectId, address);
    const emailId = crypto.randomUUID();
    // A template that cannot render for this contact's data is a 422 (the error handler's mapping).
    const { email, rendered } = composeEmail(config, {
      id: emailId,
      projectId,
      source: 'CAMPAIGN',
      content: { subject: `[TEST] ${campaign.subject}`, body: campaign.body, type: campaign.type },
      sender: { fromAddress: campaign.from, fromName: campaign.fromName, replyTo: campaign.replyTo, domain: sender.domain },
      // No contact: the test counts in no contact's history. Only suppression (refused above) stops it.
      recipient: { toAddress: address, toName: null, contactId: null, suppressed: false, subscribed: true },
      personalisation: {
        contact: contact ?? { id: '', email: address, data: {} },
        requestData: {},
        linkContactId: contact?.id ?? crypto.randomUUID(),
      },
      // No campaign id: the test counts in none of the campaign's statistics.
      owners: { templateId: null, campaignId: null },
    });
    try {
      await deps.deliveries.record(projectId, [email]);
    } catch (err) {
      if (err instanceof WorkflowStartError) throw workflowStartApiError(err, 'The test email could not be queued; nothing was sent. Try again shortly.');
      throw err;
    }
    ctx.body = { success: true, data: { email: emailId, to: address, subject: rendered.subject }, message: `Test email sent to ${address}` };
  });

  router.get('/campaigns/:id/stats', async (ctx) => {
    const campaign = await loadCampaign(ctx);
    const stats = await campaignRepository.stats(ctx.state.em, campaign);
    ctx.body = {
      success: true,
      data: {
        ...stats,
        openRate: rate(stats.openedCount, stats.sentCount),
        clickRate: rate(stats.clickedCount, stats.sentCount),
        bounceRate: rate(stats.bouncedCount, stats.sentCount),
        deliveryRate: rate(stats.deliveredCount, stats.sentCount),
      },
    };
  });

  return router;
}
