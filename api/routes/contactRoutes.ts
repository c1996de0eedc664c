import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, conflict, notFound, plainBadRequest } from '../../lib/errors';
import { isUuid, parseBody, parseQuery } from '../http/validation';
import { emailAddress } from '../schemas/commonFields';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { contactRepository } from '../../db/contacts/contactRepository';
import { serializeContact } from '../../services/contacts/contactShape';
import { contactQueries } from '../../db/contacts/contactQueries';
import { contactFields, customFieldPath, STANDARD_FIELDS } from '../../db/contacts/contactFields';
import { splitDataChanges } from '../../services/contacts/contactDataRules';
import { contactUsage } from '../../services/contacts/contactFieldUsage';
import { contactListQuery, contactUpsertBody, contactPatchBody, contactLookupBody, fieldValuesQuery, contactCursor } from '../schemas/contactSchemas';

/** The contacts endpoints of the specification (secret key). */
export function contactRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  router.use('/contacts', ...auth);

  async function loadContact(ctx: AppContext, id: string) {
    const contact = isUuid(id) ? await contactRepository.findById(ctx.state.em, ctx.state.project!.id, id) : null;
    if (!contact) throw notFound('contact', id);
    return contact;
  }

  router.get('/contacts', async (ctx) => {
    const q = parseQuery(contactListQuery, ctx.query);
    let after: { v: string; id: string } | undefined;
    if (q.cursor) {
      const c = decodeCursor(q.cursor, contactCursor);
      if (c.s !== q.sort || c.d !== q.dir) {
        throw badRequest('This cursor belongs to a different sort order; pass the same sort and dir as the first page');
      }
      after = { v: c.v, id: c.id };
    }
    const page = await contactQueries.list(ctx.state.em, ctx.state.project!.id, {
      limit: q.limit,
      search: q.search?.trim() || undefined,
      subscribed: q.subscribed === undefined ? undefined : q.subscribed === 'true',
      sort: q.sort,
      dir: q.dir,
      after,
      withTotal: !q.cursor,
    });
    const last = page.contacts[page.contacts.length - 1];
    ctx.body = {
      data: page.contacts.map(serializeContact),
      cursor:
        page.hasMore && last ? encodeCursor({ s: q.sort, d: q.dir, v: q.sort === 'email' ? last.email : last.createdAt.toISOString(), id: last.id }) : null,
      hasMore: page.hasMore,
      total: page.total,
      // True when a search matched more than SEARCH_TOTAL_CAP contacts and `total` is that cap.
      totalCapped: page.totalCapped,
    };
  });

  router.post('/contacts', async (ctx) => {
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    // The specification's plain 400 for a missing or malformed email.
    const email = emailAddress.safeParse(raw.email);
    if (!email.success) throw plainBadRequest(raw.email === undefined ? 'email is required' : 'email must be a valid email address');
    const body = parseBody(contactUpsertBody, raw);
    const [result] = await contactRepository.upsertByEmail(ctx.state.em, ctx.state.project!.id, [
      { email: body.email, subscribedIfNew: body.subscribed ?? true, subscribedIfExisting: body.subscribed, data: splitDataChanges(body.data) },
    ]);
    await deps.eventTriggers.afterEventsRecorded(ctx.state.project!.id, result.events);
    await deps.eventTriggers.afterContactsChanged(ctx.state.project!.id, [result.contact.id]);
    ctx.status = result.created ? 201 : 200;
    ctx.body = { ...serializeContact(result.contact), _meta: { isNew: result.created, isUpdate: !result.created } };
  });

  router.post('/contacts/lookup', async (ctx) => {
    const { emails } = parseBody(contactLookupBody, ctx.request.body);
    const found = await contactQueries.lookup(ctx.state.em, ctx.state.project!.id, emails);
    const foundEmails = new Set(found.map((c) => c.email));
    ctx.body = { found, notFound: [...new Set(emails)].filter((e) => !foundEmails.has(e)) };
  });

  router.get('/contacts/fields', async (ctx) => {
    ctx.body = await contactFields.list(ctx.state.em, ctx.state.project!.id);
  });

  function customField(field: string): string[] {
    if (STANDARD_FIELDS.some((f) => f.field === field)) throw badRequest(`${field} is a standard field, not a custom one`);
    const path = customFieldPath(field);
    if (!path) throw badRequest(`Invalid field name: ${field.slice(0, 120)}`);
    return path;
  }

  router.get('/contacts/fields/:field/values', async (ctx) => {
    const path = customField(ctx.params.field);
    const { limit } = parseQuery(fieldValuesQuery, ctx.query);
    const values = await contactFields.values(ctx.state.em, ctx.state.project!.id, path, limit);
    ctx.body = { field: `data.${path.join('.')}`, values, count: values.length, limit };
  });

  router.get('/contacts/fields/:field/usage', async (ctx) => {
    const path = customField(ctx.params.field);
    ctx.body = await contactUsage(ctx.state.em, ctx.state.project!.id, path);
  });

  router.delete('/contacts/fields/:field', async (ctx) => {
    const path = customField(ctx.params.field);
    const usage = await contactUsage(ctx.state.em, ctx.state.project!.id, path);
    if (!usage.canDelete)
      throw conflict('This field is still referenced; remove it from those first', {
        segments: usage.segments,
        campaigns: usage.campaigns,
        workflows: usage.workflows,
      });
    const deletedFrom = await contactFields.remove(ctx.state.em, ctx.state.project!.id, path);
    ctx.body = { field: `data.${path.join('.')}`, deletedFrom };
  });

  router.get('/contacts/:id', async (ctx) => {
    ctx.body = serializeContact(await loadContact(ctx, ctx.params.id));
  });

  router.patch('/contacts/:id', async (ctx) => {
    const current = await loadContact(ctx, ctx.params.id);
    const body = parseBody(contactPatchBody, ctx.request.body);
    const em = ctx.state.em;
    const projectId = ctx.state.project!.id;
    const result = await em.transactional(async (tx) => {
      if (body.email && body.email !== current.email) {
        const taken = await contactRepository.findByEmail(tx, projectId, body.email);
        if (taken) throw conflict(`Another contact already uses ${body.email}`, { email: body.email, contactId: taken.id });
        try {
          await contactRepository.changeEmail(tx, projectId, current.id, body.email);
        } catch (err) {
          if ((err as { code?: string }).code === '23505') throw conflict(`Another contact already uses ${body.email}`, { email: body.email });
          throw err;
        }
      }
      const [upserted] = await contactRepository.upsertByEmail(tx, projectId, [
        { email: body.email ?? current.email, subscribedIfNew: current.subscribed, subscribedIfExisting: body.subscribed, data: splitDataChanges(body.data) },
      ]);
      return upserted;
    });
    await deps.eventTriggers.afterEventsRecorded(projectId, result.events);
    await deps.eventTriggers.afterContactsChanged(projectId, [result.contact.id]);
    ctx.body = serializeContact(result.contact);
  });

  router.delete('/contacts/:id', async (ctx) => {
    const contact = await loadContact(ctx, ctx.params.id);
    await contactRepository.deleteById(ctx.state.em, ctx.state.project!.id, contact.id);
    ctx.status = 204;
  });

  return router;
}
