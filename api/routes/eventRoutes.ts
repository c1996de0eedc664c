import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { isUuid, parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { eventRepository } from '../../db/events/eventRepository';
import { serializeEvent } from '../presenters/eventPresenter';
import { contactRepository } from '../../db/contacts/contactRepository';
import { segmentRepository } from '../../db/segments/segmentRepository';
import { automationRepository } from '../../db/automations/automationRepository';
import { eventCursor, eventListQuery } from '../schemas/eventSchemas';

/** The events endpoints (secret key). POST /events/track lives with /v1/track in trackRoutes. */
export function eventRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);

  async function page(ctx: Parameters<Parameters<typeof router.get>[1]>[0], contactId?: string) {
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

  router.get('/events', ...auth, async (ctx) => {
    ctx.body = await page(ctx);
  });

  router.get('/events/stats', ...auth, async (ctx) => {
    ctx.body = await eventRepository.stats(ctx.state.em, ctx.state.project!.id);
  });

  router.get('/events/names', ...auth, async (ctx) => {
    ctx.body = { names: await eventRepository.names(ctx.state.em, ctx.state.project!.id) };
  });

  router.get('/events/contact/:contactId', ...auth, async (ctx) => {
    const contactId = ctx.params.contactId;
    const contact = isUuid(contactId) ? await contactRepository.findById(ctx.state.em, ctx.state.project!.id, contactId) : null;
    if (!contact) throw notFound('contact', contactId);
    ctx.body = await page(ctx, contact.id);
  });

  // Workflows it starts or that wait for it, and segments and FILTERED campaign audiences whose
  // conditions name event.<eventName>.
  router.get('/events/:eventName/usage', ...auth, async (ctx) => {
    const { segments, campaigns } = await segmentRepository.usingEvent(ctx.state.em, ctx.state.project!.id, ctx.params.eventName);
    const workflows = await automationRepository.usingEvent(ctx.state.em, ctx.state.project!.id, ctx.params.eventName);
    ctx.body = { event: ctx.params.eventName, workflows, segments, campaigns };
  });

  router.delete('/events/:eventName', ...auth, async (ctx) => {
    ctx.body = { event: ctx.params.eventName, deleted: await eventRepository.deleteByName(ctx.state.em, ctx.state.project!.id, ctx.params.eventName) };
  });

  return router;
}
