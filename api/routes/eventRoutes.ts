import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { isUuid, parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { eventRepository } from '../../db/events/eventRepository';
import { serializeEvent } from '../presenters/eventPresenter';
import { contactRepository } from '../../db/contacts/contactRepository';
import { segmentRepository } from '../../db/segments/segmentRepository';
import { automationRepository } from '../../db/automations/automationRepository';
import {
  eventCursor,
  eventDeleteResponse,
  eventListQuery,
  eventListResponse,
  eventNamesResponse,
  eventStatsResponse,
  eventUsageResponse,
} from '../schemas/eventSchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** The events endpoints (secret key). POST /events/track lives with /v1/track in trackRoutes. */
export function eventRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Events', access: 'secret' });
  const auth = keyAuthenticated('secret', deps);

  async function page(ctx: AppContext, contactId?: string): Promise<z.input<typeof eventListResponse>> {
    const q = parseQuery(eventListQuery, ctx.query);
    const after = q.cursor ? decodeCursor(q.cursor, eventCursor).seq : undefined;
    const filterContact = contactId ?? q.contactId;
    if (filterContact !== undefined && !isUuid(filterContact)) throw notFound('contact', filterContact);
    const result = await eventRepository.list(ctx.state.em, ctx.state.project!.id, {
      limit: q.limit,
      name: q.name || undefined,
      contactId: filterContact,
      after,
      withTotal: !q.cursor,
    });
    const last = result.events[result.events.length - 1];
    return {
      data: result.events.map(serializeEvent),
      cursor: result.hasMore && last ? encodeCursor({ seq: last.seq }) : null,
      hasMore: result.hasMore,
      total: result.total,
    };
  }

  route.get(
    '/events',
    {
      summary: 'List events',
      description:
        'Newest first, a page at a time (`limit` 1..100, default 20; pass `cursor` from the previous page). Filter by `name` or `contactId`. ' +
        '`total` is counted on the first page only (0 on later ones).',
      query: eventListQuery,
      responses: { 200: { description: 'One page of events', schema: eventListResponse } },
    },
    ...auth,
    async (ctx) => {
      ctx.body = await page(ctx);
    },
  );

  route.get(
    '/events/stats',
    {
      summary: 'Event counts',
      description: 'All the project’s events, those of the last 24 hours and 7 days, and the count of each name.',
      responses: { 200: { description: 'The counts', schema: eventStatsResponse } },
    },
    ...auth,
    async (ctx) => {
      ctx.body = (await eventRepository.stats(ctx.state.em, ctx.state.project!.id)) satisfies z.input<typeof eventStatsResponse>;
    },
  );

  route.get(
    '/events/names',
    {
      summary: 'List event names',
      description: 'Every name recorded in the project, in alphabetical order.',
      responses: { 200: { description: 'The names', schema: eventNamesResponse } },
    },
    ...auth,
    async (ctx) => {
      ctx.body = { names: await eventRepository.names(ctx.state.em, ctx.state.project!.id) } satisfies z.input<typeof eventNamesResponse>;
    },
  );

  route.get(
    '/events/contact/:contactId',
    {
      summary: 'List a contact’s events',
      description: 'As GET /events, for one contact (its `contactId` query parameter is ignored).',
      query: eventListQuery,
      responses: { 200: { description: 'One page of the contact’s events', schema: eventListResponse } },
    },
    ...auth,
    async (ctx) => {
      const contactId = ctx.params.contactId;
      const contact = isUuid(contactId) ? await contactRepository.findById(ctx.state.em, ctx.state.project!.id, contactId) : null;
      if (!contact) throw notFound('contact', contactId);
      ctx.body = await page(ctx, contact.id);
    },
  );

  // Workflows it starts or that wait for it, and segments and FILTERED campaign audiences whose
  // conditions name event.<eventName>.
  route.get(
    '/events/:eventName/usage',
    {
      summary: 'Where an event name is used',
      description: 'Workflows it starts or that wait for it, and segments and filtered campaign audiences whose conditions name it.',
      responses: { 200: { description: 'Its references', schema: eventUsageResponse } },
    },
    ...auth,
    async (ctx) => {
      const { segments, campaigns } = await segmentRepository.usingEvent(ctx.state.em, ctx.state.project!.id, ctx.params.eventName);
      const workflows = await automationRepository.usingEvent(ctx.state.em, ctx.state.project!.id, ctx.params.eventName);
      ctx.body = { event: ctx.params.eventName, workflows, segments, campaigns } satisfies z.input<typeof eventUsageResponse>;
    },
  );

  route.delete(
    '/events/:eventName',
    {
      summary: 'Delete the events of a name',
      description: 'Removes every event of this name from the project.',
      responses: { 200: { description: 'The name and how many events were deleted', schema: eventDeleteResponse } },
    },
    ...auth,
    async (ctx) => {
      ctx.body = {
        event: ctx.params.eventName,
        deleted: await eventRepository.deleteByName(ctx.state.em, ctx.state.project!.id, ctx.params.eventName),
      } satisfies z.input<typeof eventDeleteResponse>;
    },
  );

  return router;
}
