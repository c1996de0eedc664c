import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, conflict, notFound, plainBadRequest } from '../../lib/errors';
import { isUuid, parseBody, parseQuery } from '../http/validation';
import { emailAddress } from '../schemas/commonFields';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { contactRepository } from '../../db/contacts/contactRepository';
import { deleteContacts } from '../../db/contacts/contactDeletion';
import { serializeContact } from '../../services/contacts/contactShape';
import { contactQueries } from '../../db/contacts/contactQueries';
import { contactFields, customFieldPath, STANDARD_FIELDS } from '../../db/contacts/contactFields';
import { updateContact, upsertContact } from '../../services/contacts/contactEditing';
import { contactUsage } from '../../services/contacts/contactFieldUsage';
import {
  contactListQuery,
  contactUpsertBody,
  contactPatchBody,
  contactLookupBody,
  fieldValuesQuery,
  contactCursor,
  contactResponse,
  contactWriteResponse,
  contactListResponse,
  contactLookupResponse,
  contactFieldsResponse,
  fieldValuesResponse,
  contactFieldUsageResponse,
  contactFieldDeleteResponse,
} from '../schemas/contactSchemas';
import { describedRoutes } from '../openapi/describedRouter';

const CONTACT_EXAMPLE = {
  id: '0b6f3c1e-5d2a-4f8e-9a41-7c3d2e1f0a9b',
  email: 'ada@example.com',
  subscribed: true,
  data: { firstName: 'Ada', plan: 'pro' },
  createdAt: '2026-11-02T09:14:07.512Z',
  updatedAt: '2026-11-20T16:40:31.088Z',
};

/** The contacts endpoints of the specification (secret key). */
export function contactRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Contacts', access: 'secret' });
  const auth = keyAuthenticated('secret', deps);
  router.use('/contacts', ...auth);

  async function loadContact(ctx: AppContext, id: string) {
    const contact = isUuid(id) ? await contactRepository.findById(ctx.state.em, ctx.state.project!.id, id) : null;
    if (!contact) throw notFound('contact', id);
    return contact;
  }

  route.get(
    '/contacts',
    {
      summary: 'List contacts',
      description:
        'Newest first by default, a page at a time (`limit` 1..100, default 20); pass `cursor` from the previous page with the same `sort` and `dir`. ' +
        '`search` matches part of the email address. `total` is counted on the first page only (0 on later ones); ' +
        'with a search it stops at 10,000, and `totalCapped` then says so.',
      query: contactListQuery,
      responses: {
        200: {
          description: 'One page of contacts',
          schema: contactListResponse,
          example: {
            data: [CONTACT_EXAMPLE],
            cursor:
              'eyJzIjoiY3JlYXRlZEF0IiwiZCI6ImRlc2MiLCJ2IjoiMjAyNi0xMS0wMlQwOToxNDowNy41MTJaIiwiaWQiOiIwYjZmM2MxZS01ZDJhLTRmOGUtOWE0MS03YzNkMmUxZjBhOWIifQ',
            hasMore: true,
            total: 1342,
            totalCapped: false,
          },
        },
      },
    },
    async (ctx) => {
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
      } satisfies z.input<typeof contactListResponse>;
    },
  );

  route.post(
    '/contacts',
    {
      summary: 'Create or update a contact',
      description:
        'Upserts by email address. A new contact is subscribed unless `subscribed` says otherwise; `data` keys are merged into the ' +
        'contact’s data under the data rules (`null` removes a key, `""` is ignored). Answers 201 when the contact was created, 200 when it was updated. ' +
        'A missing or malformed `email` answers the plain 400 body `{ error }`.',
      body: {
        schema: contactUpsertBody,
        example: { email: 'ada@example.com', subscribed: true, data: { firstName: 'Ada', plan: 'pro' } },
      },
      plain400: true,
      responses: {
        200: { description: 'An existing contact, updated', schema: contactWriteResponse },
        201: {
          description: 'A new contact',
          schema: contactWriteResponse,
          example: { ...CONTACT_EXAMPLE, updatedAt: CONTACT_EXAMPLE.createdAt, _meta: { isNew: true, isUpdate: false } },
        },
      },
    },
    async (ctx) => {
      const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
      // The specification's plain 400 for a missing or malformed email.
      const email = emailAddress.safeParse(raw.email);
      if (!email.success) throw plainBadRequest(raw.email === undefined ? 'email is required' : 'email must be a valid email address');
      const body = parseBody(contactUpsertBody, raw);
      const result = await upsertContact(deps, ctx.state.em, ctx.state.project!.id, body);
      ctx.status = result.created ? 201 : 200;
      ctx.body = { ...serializeContact(result.contact), _meta: { isNew: result.created, isUpdate: !result.created } } satisfies z.input<
        typeof contactWriteResponse
      >;
    },
  );

  route.post(
    '/contacts/lookup',
    {
      summary: 'Look up contacts by email',
      description: 'Up to 500 addresses at once: the contacts found, and the addresses that have none.',
      body: { schema: contactLookupBody },
      responses: { 200: { description: 'The contacts found and the addresses not found', schema: contactLookupResponse } },
    },
    async (ctx) => {
      const { emails } = parseBody(contactLookupBody, ctx.request.body);
      const found = await contactQueries.lookup(ctx.state.em, ctx.state.project!.id, emails);
      const foundEmails = new Set(found.map((c) => c.email));
      ctx.body = { found, notFound: [...new Set(emails)].filter((e) => !foundEmails.has(e)) } satisfies z.input<typeof contactLookupResponse>;
    },
  );

  route.get(
    '/contacts/fields',
    {
      summary: 'List contact fields',
      description: 'The standard fields, then every top-level key of the contacts’ data with its most common type and the percentage of contacts that have it.',
      responses: { 200: { description: 'The fields', schema: contactFieldsResponse } },
    },
    async (ctx) => {
      ctx.body = (await contactFields.list(ctx.state.em, ctx.state.project!.id)) satisfies z.input<typeof contactFieldsResponse>;
    },
  );

  function customField(field: string): string[] {
    if (STANDARD_FIELDS.some((f) => f.field === field)) throw badRequest(`${field} is a standard field, not a custom one`);
    const path = customFieldPath(field);
    if (!path) throw badRequest(`Invalid field name: ${field.slice(0, 120)}`);
    return path;
  }

  route.get(
    '/contacts/fields/:field/values',
    {
      summary: 'Most frequent values of a contact field',
      description: 'The distinct values of a custom field (`data.plan` or `plan`; a dotted name reaches into an object), most frequent first.',
      query: fieldValuesQuery,
      responses: { 200: { description: 'The values', schema: fieldValuesResponse } },
    },
    async (ctx) => {
      const path = customField(ctx.params.field);
      const { limit } = parseQuery(fieldValuesQuery, ctx.query);
      const values = await contactFields.values(ctx.state.em, ctx.state.project!.id, path, limit);
      ctx.body = { field: `data.${path.join('.')}`, values, count: values.length, limit } satisfies z.input<typeof fieldValuesResponse>;
    },
  );

  route.get(
    '/contacts/fields/:field/usage',
    {
      summary: 'Where a contact field is used',
      description:
        'Segments and filtered campaign audiences whose conditions name the field, workflows whose conditions read it, and how many contacts have it.',
      responses: { 200: { description: 'Its references; `canDelete` is true when there are none', schema: contactFieldUsageResponse } },
    },
    async (ctx) => {
      const path = customField(ctx.params.field);
      ctx.body = (await contactUsage(ctx.state.em, ctx.state.project!.id, path)) satisfies z.input<typeof contactFieldUsageResponse>;
    },
  );

  route.delete(
    '/contacts/fields/:field',
    {
      summary: 'Delete a contact field',
      description: 'Removes the custom field from every contact. Refused (409) while a segment, campaign or workflow still references it.',
      responses: { 200: { description: 'The field and how many contacts had it', schema: contactFieldDeleteResponse } },
    },
    async (ctx) => {
      const path = customField(ctx.params.field);
      const usage = await contactUsage(ctx.state.em, ctx.state.project!.id, path);
      if (!usage.canDelete)
        throw conflict('This field is still referenced; remove it from those first', {
          segments: usage.segments,
          campaigns: usage.campaigns,
          workflows: usage.workflows,
        });
      const deletedFrom = await contactFields.remove(ctx.state.em, ctx.state.project!.id, path);
      ctx.body = { field: `data.${path.join('.')}`, deletedFrom } satisfies z.input<typeof contactFieldDeleteResponse>;
    },
  );

  route.get(
    '/contacts/:id',
    {
      summary: 'Get a contact',
      responses: { 200: { description: 'The contact', schema: contactResponse, example: CONTACT_EXAMPLE } },
    },
    async (ctx) => {
      ctx.body = serializeContact(await loadContact(ctx, ctx.params.id)) satisfies z.input<typeof contactResponse>;
    },
  );

  route.patch(
    '/contacts/:id',
    {
      summary: 'Update a contact',
      description: 'Changes its email address (409 if another contact has it), its subscription, or its data under the data rules.',
      body: { schema: contactPatchBody },
      responses: { 200: { description: 'The contact as updated', schema: contactResponse } },
    },
    async (ctx) => {
      const current = await loadContact(ctx, ctx.params.id);
      const body = parseBody(contactPatchBody, ctx.request.body);
      const result = await updateContact(deps, ctx.state.em, ctx.state.project!.id, current, body);
      ctx.body = serializeContact(result.contact) satisfies z.input<typeof contactResponse>;
    },
  );

  route.delete('/contacts/:id', { summary: 'Delete a contact', responses: { 204: { description: 'Deleted' } } }, async (ctx) => {
    const contact = await loadContact(ctx, ctx.params.id);
    await deleteContacts(ctx.state.em, ctx.state.project!.id, { ids: [contact.id] });
    ctx.status = 204;
  });

  return router;
}
