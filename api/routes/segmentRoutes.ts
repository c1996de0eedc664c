import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, conflict, notFound, plainBadRequest, validationFailed } from '../../lib/errors';
import { isUuid, parseBody, parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { validateConditionTree, type ConditionTree } from '../../db/conditions';
import { segmentRepository, type SegmentRow } from '../../db/segments/segmentRepository';
import { serializeSegment } from '../presenters/segmentPresenter';
import { addStaticMembers, removeStaticMembers, updateSegment } from '../../services/segments/segmentEditing';
import { recomputeTrackedSegment } from '../../services/segments/trackedSegmentRecompute';
import { serializeContact } from '../../services/contacts/contactShape';
import {
  addSegmentMembersBody,
  addSegmentMembersResponse,
  createSegmentBody,
  patchSegmentBody,
  removeSegmentMembersBody,
  removeSegmentMembersResponse,
  segmentComputeResponse,
  segmentContactsResponse,
  segmentListResponse,
  segmentPageQuery,
  segmentResponse,
} from '../schemas/segmentSchemas';
import { describedRoutes } from '../openapi/describedRouter';

const isPlainObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Segments (specification "Segments (S)", contract section 10), secret key. */
export function segmentRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.use('/segments', ...keyAuthenticated('secret', deps));
  const route = describedRoutes(router, { tag: 'Segments', access: 'secret' });

  async function loadSegment(ctx: AppContext): Promise<SegmentRow> {
    const id = ctx.params.id;
    const segment = isUuid(id) ? await segmentRepository.findById(ctx.state.em, ctx.state.project!.id, id) : null;
    if (!segment) throw notFound('segment', id);
    return segment;
  }

  async function checkedCondition(ctx: AppContext, condition: unknown, selfSegmentId?: string): Promise<ConditionTree> {
    const errors = await validateConditionTree(ctx.state.em, ctx.state.project!.id, condition, { selfSegmentId, path: 'condition' });
    if (errors.length) throw validationFailed(errors);
    return condition as ConditionTree;
  }

  route.post(
    '/segments',
    {
      summary: 'Create a segment',
      description:
        'A DYNAMIC segment (the default) is its `condition`, a condition tree; a STATIC one has members added by hand. ' +
        'A missing `name`, or a DYNAMIC segment without an object `condition`, is the specification’s plain 400 `{ error }`; ' +
        'a condition that names unknown fields, operators or segments is a 422. With `trackMembership`, entry and exit events are recorded as members change.',
      body: { schema: createSegmentBody },
      plain400: true,
      responses: { 201: { description: 'The segment', schema: segmentResponse } },
    },
    async (ctx) => {
      const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
      // The specification's plain 400s: a missing name, a DYNAMIC segment without an object condition.
      if (typeof raw.name !== 'string' || !raw.name.trim()) throw plainBadRequest('name is required');
      if ((raw.type === undefined || raw.type === 'DYNAMIC') && !isPlainObject(raw.condition)) {
        throw plainBadRequest('condition is required for a DYNAMIC segment and must be an object');
      }
      const body = parseBody(createSegmentBody, raw);
      const condition = body.type === 'DYNAMIC' ? await checkedCondition(ctx, body.condition) : null;
      const segment = await segmentRepository.create(ctx.state.em, {
        projectId: ctx.state.project!.id,
        name: body.name,
        description: body.description ?? null,
        type: body.type,
        condition,
        trackMembership: body.trackMembership ?? false,
      });
      ctx.status = 201;
      ctx.body = serializeSegment(segment);
    },
  );

  route.get(
    '/segments',
    { summary: 'List segments', responses: { 200: { description: 'Every segment of the project', schema: segmentListResponse } } },
    async (ctx) => {
      ctx.body = (await segmentRepository.list(ctx.state.em, ctx.state.project!.id)).map(serializeSegment);
    },
  );

  route.get('/segments/:id', { summary: 'Get a segment', responses: { 200: { description: 'The segment', schema: segmentResponse } } }, async (ctx) => {
    ctx.body = serializeSegment(await loadSegment(ctx));
  });

  route.patch(
    '/segments/:id',
    {
      summary: 'Update a segment',
      description: 'Changes the fields given. A STATIC segment takes no `condition` (422).',
      body: { schema: patchSegmentBody },
      responses: { 200: { description: 'The segment as updated', schema: segmentResponse } },
    },
    async (ctx) => {
      const current = await loadSegment(ctx);
      const body = parseBody(patchSegmentBody, ctx.request.body);
      let condition: ConditionTree | undefined;
      if (body.condition !== undefined) {
        if (current.type === 'STATIC') {
          throw validationFailed([
            { field: 'condition', message: 'A STATIC segment has no condition; its members are managed through /segments/:id/members', code: 'custom' },
          ]);
        }
        condition = await checkedCondition(ctx, body.condition, current.id);
      }
      const segment = await updateSegment(deps, ctx.state.em, current, {
        name: body.name,
        description: body.description,
        condition,
        trackMembership: body.trackMembership,
      });
      ctx.body = serializeSegment(segment);
    },
  );

  route.delete(
    '/segments/:id',
    {
      summary: 'Delete a segment',
      description: 'Refused (409, naming them) while an unfinished campaign (DRAFT, SCHEDULED, SENDING) or another segment’s condition uses it.',
      responses: { 204: { description: 'Deleted' } },
    },
    async (ctx) => {
      const segment = await loadSegment(ctx);
      const em = ctx.state.em;
      const campaigns = await segmentRepository.activeCampaignsUsing(em, segment.projectId, segment.id);
      if (campaigns.length) {
        throw conflict('This segment is used by a campaign that is not finished (DRAFT, SCHEDULED or SENDING)', { segmentId: segment.id, campaigns });
      }
      const segments = await segmentRepository.segmentsReferring(em, segment.projectId, segment.id);
      if (segments.length) throw conflict('Other segments refer to this segment in their condition', { segmentId: segment.id, segments });
      await segmentRepository.delete(em, segment.projectId, segment.id);
      ctx.status = 204;
    },
  );

  route.get(
    '/segments/:id/contacts',
    {
      summary: 'List a segment’s contacts',
      description: 'The contacts matching it now (a DYNAMIC segment is evaluated on each call); `pageSize` is clamped to 1..100.',
      query: segmentPageQuery,
      responses: { 200: { description: 'A page of contacts', schema: segmentContactsResponse } },
    },
    async (ctx) => {
      const segment = await loadSegment(ctx);
      const { page, pageSize } = parseQuery(segmentPageQuery, ctx.query);
      const { contacts, total } = await segmentRepository.members(ctx.state.em, segment, page, pageSize);
      ctx.body = {
        data: contacts.map(serializeContact),
        total,
        page,
        pageSize,
        totalPages: Math.ceil(total / pageSize),
      } satisfies z.input<typeof segmentContactsResponse>;
    },
  );

  route.post(
    '/segments/:id/members',
    {
      summary: 'Add members to a STATIC segment',
      description:
        'At most 500 addresses a call. With `createMissing`, addresses that are no contact yet become contacts (`subscribed`, default true); ' +
        'otherwise they are answered in `notFound`. A DYNAMIC segment is refused (400).',
      body: { schema: addSegmentMembersBody },
      responses: { 200: { description: 'How many were added and created, and the addresses that are no contact', schema: addSegmentMembersResponse } },
    },
    async (ctx) => {
      const segment = await loadSegment(ctx);
      if (segment.type !== 'STATIC') throw badRequest('Members are managed by hand on STATIC segments only; this segment is DYNAMIC');
      const body = parseBody(addSegmentMembersBody, ctx.request.body);
      ctx.body = (await addStaticMembers(deps, ctx.state.em, segment, body)) satisfies z.input<typeof addSegmentMembersResponse>;
    },
  );

  route.delete(
    '/segments/:id/members',
    {
      summary: 'Remove members from a STATIC segment',
      description: 'At most 500 addresses a call. A DYNAMIC segment is refused (400).',
      body: { schema: removeSegmentMembersBody },
      responses: { 200: { description: 'How many were removed', schema: removeSegmentMembersResponse } },
    },
    async (ctx) => {
      const segment = await loadSegment(ctx);
      if (segment.type !== 'STATIC') throw badRequest('Members are managed by hand on STATIC segments only; this segment is DYNAMIC');
      const body = parseBody(removeSegmentMembersBody, ctx.request.body);
      const removed = await removeStaticMembers(deps, ctx.state.em, segment, body.emails);
      ctx.body = { removed } satisfies z.input<typeof removeSegmentMembersResponse>;
    },
  );

  route.post(
    '/segments/:id/compute',
    {
      summary: 'Recompute a tracked segment',
      description: 'For a DYNAMIC segment with `trackMembership` (400 otherwise): its members brought up to date now, recording entry and exit events.',
      responses: { 200: { description: 'Members added and removed, and the total', schema: segmentComputeResponse } },
    },
    async (ctx) => {
      const segment = await loadSegment(ctx);
      if (segment.type !== 'DYNAMIC' || !segment.trackMembership) {
        throw badRequest('Only a DYNAMIC segment with trackMembership keeps members to compute; use /refresh to recount this one');
      }
      ctx.body = (await recomputeTrackedSegment(deps, ctx.state.em, segment)) satisfies z.input<typeof segmentComputeResponse>;
    },
  );

  route.post(
    '/segments/:id/refresh',
    {
      summary: 'Recount a segment',
      description: 'Counts the segment’s members now and stores `memberCount`.',
      responses: { 200: { description: 'The segment with its new count', schema: segmentResponse } },
    },
    async (ctx) => {
      const segment = await loadSegment(ctx);
      const refreshed = await segmentRepository.refreshCount(ctx.state.em, segment);
      if (!refreshed) throw notFound('segment', segment.id);
      ctx.body = serializeSegment(refreshed);
    },
  );

  return router;
}
