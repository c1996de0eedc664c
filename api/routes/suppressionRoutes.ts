import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { parseBody, parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { emailAddress } from '../schemas/commonFields';
import { suppressionBody, suppressionCursor, suppressionListQuery, suppressionListResponse, suppressionResponse } from '../schemas/suppressionSchemas';
import { describedRoutes } from '../openapi/describedRouter';
import { suppressionRepository } from '../../db/emails/suppressionRepository';
import { serializeSuppression } from '../presenters/suppressionPresenter';

/** The suppression list (contract 20), secret key or session. */
export function suppressionRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  const route = describedRoutes(router, { tag: 'Suppressions', access: 'secret' });

  route.get(
    '/suppressions',
    {
      summary: 'List suppressed addresses',
      description: 'Newest first, in cursor pages; `email` finds one whole address. Nothing is sent to a suppressed address.',
      query: suppressionListQuery,
      responses: { 200: { description: 'A page of suppressions', schema: suppressionListResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(suppressionListQuery, ctx.query);
      const after = q.cursor ? decodeCursor(q.cursor, suppressionCursor) : undefined;
      const page = await suppressionRepository.page(ctx.state.em, ctx.state.project!.id, { email: q.email, limit: q.limit, after });
      ctx.body = {
        data: page.entries.map(serializeSuppression),
        cursor: page.hasMore && page.last ? encodeCursor({ ...page.last }) : null,
        hasMore: page.hasMore,
      } satisfies z.input<typeof suppressionListResponse>;
    },
  );

  route.post(
    '/suppressions',
    {
      summary: 'Suppress an address',
      description: 'Adds the address by hand (reason MANUAL). An address already on the list is answered as it is, with 200.',
      body: { schema: suppressionBody, example: { email: 'ada@example.com' } },
      responses: {
        201: { description: 'Added', schema: suppressionResponse },
        200: { description: 'Already on the list (its entry unchanged)', schema: suppressionResponse },
      },
    },
    ...auth,
    async (ctx) => {
      const body = parseBody(suppressionBody, ctx.request.body);
      const { entry, created } = await suppressionRepository.add(ctx.state.em, ctx.state.project!.id, body.email);
      ctx.status = created ? 201 : 200;
      ctx.body = serializeSuppression(entry);
    },
  );

  // Lifting a suppression leaves the contact's `subscribed` as it is (contract 20).
  route.delete(
    '/suppressions/:email',
    {
      summary: 'Lift a suppression',
      description: 'The contact’s `subscribed` stays as it is.',
      responses: { 204: { description: 'Lifted' } },
    },
    ...auth,
    async (ctx) => {
      // An address that is not one (or not as stored) cannot be on the list: 404 like any unknown id.
      const address = emailAddress.safeParse(ctx.params.email);
      const removed = address.success && (await suppressionRepository.remove(ctx.state.em, ctx.state.project!.id, address.data));
      if (!removed) throw notFound('suppression', ctx.params.email);
      ctx.status = 204;
    },
  );

  return router;
}
