import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { isUuid } from '../http/validation';
import { openLinkToken, verifyClickSignature } from '../../mail/links/signedLinks';
import { applyClick, applyOpen } from '../../services/sending/emailFeedback';
import { sendPage } from '../pages/publicPage';
import { describedRoutes } from '../openapi/describedRouter';
import { clickQuery } from '../schemas/trackingSchemas';

/** The smallest transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const invalidLinkPage = {
  title: 'Link not valid',
  paragraphs: ['This link is damaged or incomplete, so it cannot be followed. If you copied it from an email, check that you copied all of it.'],
};

/**
 * Open and click tracking (contract section 9). No key and no rate limit: the links carry their
 * own signatures (mail/links/signedLinks.ts). Every hit counts, link scanners and repeats
 * included; only the first open / click records an event (services/sending/emailFeedback.ts).
 */
export function trackingRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Tracking', access: 'none' });

  /** Recording must never cost the reader the pixel or the redirect: a failure is logged, not answered. */
  async function record(ctx: AppContext, what: string, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (err) {
      deps.logger.error({ err, requestId: ctx.state.requestId }, `tracking: recording the ${what} failed`);
    }
  }

  // The pixel answers the same image whatever the token, so a mail client never shows a broken
  // image and a prober learns nothing; only a valid token records an open.
  route.get(
    '/t/o/:file',
    {
      summary: 'Open-tracking pixel',
      description:
        'The image in a tracked email, `{token}.gif`. Answers the same transparent 1×1 GIF whatever the token; ' +
        'only a valid token records an open (the first one records the `email.opened` event). Never cached.',
      responses: { 200: { description: 'A transparent 1×1 GIF', contentType: 'image/gif' } },
    },
    async (ctx) => {
      const file = ctx.params.file;
      const emailId = file.endsWith('.gif') ? openLinkToken(deps.config.secret, 'open', file.slice(0, -4)) : null;
      // HEAD is a link checker asking about the image, never a mail client showing it.
      if (emailId && ctx.method === 'GET') await record(ctx, 'open', () => applyOpen(deps, ctx.state.em, emailId));
      ctx.status = 200;
      ctx.type = 'image/gif';
      ctx.set('Cache-Control', 'no-store, no-cache, must-revalidate, private, max-age=0');
      ctx.set('Pragma', 'no-cache');
      ctx.set('Expires', '0');
      ctx.body = PIXEL;
    },
  );

  // The redirect goes only to the URL the signature covers, so it cannot be turned into an open
  // redirect; anything else gets a page and no Location.
  route.get(
    '/t/c/:emailId',
    {
      summary: 'Click-tracking redirect',
      description:
        'A tracked link: records the click (the first one records the `email.clicked` event) and redirects to the URL the signature covers. ' +
        'A link whose signature does not match, or whose URL cannot be used, answers a page and no redirect.',
      query: clickQuery,
      responses: {
        302: { description: 'To the link’s target', headers: { Location: { description: 'The signed target URL' } } },
        400: { description: 'A page saying the link is damaged', contentType: 'text/html' },
      },
    },
    async (ctx) => {
      const emailId = ctx.params.emailId;
      const query = clickQuery.safeParse(ctx.query);
      if (!isUuid(emailId) || !query.success) return sendPage(ctx, 400, invalidLinkPage);
      const { url, sig } = query.data;
      if (!verifyClickSignature(deps.config.secret, emailId.toLowerCase(), url, sig)) return sendPage(ctx, 400, invalidLinkPage);
      await record(ctx, 'click', () => applyClick(deps, ctx.state.em, emailId.toLowerCase(), url));
      try {
        ctx.redirect(url);
      } catch {
        // A signed target that is not a usable URL (a template's typo): nowhere to send the reader.
        return sendPage(ctx, 400, invalidLinkPage);
      }
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Referrer-Policy', 'no-referrer');
    },
  );

  return router;
}
