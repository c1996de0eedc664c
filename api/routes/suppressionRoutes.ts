import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { parseBody, parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { emailAddress } from '../schemas/commonFields';
import { suppressionBody, suppressionCursor, suppressionListQuery } from '../schemas/suppressionSchemas';
import { suppressionRepository } from '../../db/emails/suppressionRepository';
import { serializeSuppression } from '../presenters/suppressionPresenter';

/** The suppression list (contract 20), secret key or session. */
export function suppressionRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);

  router.get('/suppressions', ...auth, async (ctx) => {
    const q = parseQuery(suppressionListQuery, ctx.query);
    const after = q.cursor ? decodeCursor(q.cursor, suppressionCursor) : undefined;
    const page = await suppressionRepository.page(ctx.state.em, ctx.state.project!.id, { email: q.email, limit: q.limit, after });
    ctx.body = {
      data: page.entries.map(serializeSuppression),
      cursor: page.hasMore && page.last ? encodeCursor({ ...page.last }) : null,
      hasMore: page.hasMore,
    };
  });

  router.post('/suppressions', ...auth, async (ctx) => {
    const body = parseBody(suppressionBody, ctx.request.body);
    const { entry, created } = await suppressionRepository.add(ctx.state.em, ctx.state.project!.id, body.email);
    ctx.status = created ? 201 : 200;
    ctx.body = serializeSuppression(entry);
  });

  // Lifting a suppression leaves the contact's `subscribed` as it is (contract 20).
  router.delete('/suppressions/:email', ...auth, async (ctx) => {
    // An address that is not one (or not as stored) cannot be on the list: 404 like any unknown id.
    const address = emailAddress.safeParse(ctx.params.email);
    const removed = address.success && (await suppressionRepository.remove(ctx.state.em, ctx.state.project!.id, address.data));
    if (!removed) throw notFound('suppression', ctx.params.email);
    ctx.status = 204;
  });

  return router;
}
