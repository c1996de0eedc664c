import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { readDecodedBody } from '../http/bodyDecoding';
import { openLinkToken } from '../../mail/links/signedLinks';
import { emailFeedbackRepository, type PageContact } from '../../db/emails/emailFeedbackRepository';
import { notFoundPage, sendPage, type PageContent } from '../pages/publicPage';

/** A one-click POST carries `List-Unsubscribe=One-Click`; a form post carries nothing. More is not a mail client. */
const FORM_BODY_LIMIT_BYTES = 8 * 1024;

/**
 * The pages behind `unsubscribeUrl`, `subscribeUrl` and `manageUrl` (contract section 9). GET
 * only shows a page (link scanners fetch every link in a mail, so a GET must change nothing);
 * POST makes the change: the page's own button, or a mail client's RFC 8058 one-click POST.
 * No key, no rate limit: the signed token is the authorisation. A forged token or a deleted
 * contact answers the same 404 page.
 */
export function subscriptionPages(deps: ApiDeps) {
  const router = new Router<AppState>();

  async function contactFor(ctx: AppContext): Promise<PageContact | null> {
    const contactId = openLinkToken(deps.config.secret, 'contact', String(ctx.params.token ?? ''));
    return contactId ? emailFeedbackRepository.findPageContact(ctx.state.em, contactId) : null;
  }

  /** Reads (and ignores) a form body within the limit; the JSON parser already read JSON ones. */
  async function drainFormBody(ctx: AppContext): Promise<void> {
    if (ctx.request.body !== undefined || ctx.req.readableEnded) return;
    if (!ctx.request.length && !ctx.get('Transfer-Encoding')) return;
    await readDecodedBody(ctx.req, FORM_BODY_LIMIT_BYTES);
  }

  const paths = (token: string) => ({
    unsubscribe: `/unsubscribe/${encodeURIComponent(token)}`,
    subscribe: `/subscribe/${encodeURIComponent(token)}`,
  });

  function statePage(contact: PageContact, token: string, changed: 'subscribed' | 'unsubscribed' | null): PageContent {
    const to = paths(token);
    if (!contact.subscribed) {
      return {
        title: changed ? 'You are unsubscribed' : 'You are not subscribed',
        paragraphs: [
          `${contact.email} will no longer receive marketing email from ${contact.projectName}.`,
          'Unsubscribed by mistake? You can subscribe again.',
        ],
        forms: [{ action: to.subscribe, button: 'Subscribe again', secondary: true }],
      };
    }
    return {
      title: 'You are subscribed',
      paragraphs: [`${contact.email} receives email from ${contact.projectName}.`],
      forms: [{ action: to.unsubscribe, button: 'Unsubscribe', secondary: true }],
    };
  }

  router.get('/unsubscribe/:token', async (ctx) => {
    const contact = await contactFor(ctx);
    if (!contact) return sendPage(ctx, 404, notFoundPage);
    sendPage(ctx, 200, {
      title: 'Unsubscribe',
      paragraphs: [`Stop sending marketing email from ${contact.projectName} to ${contact.email}?`],
      forms: [{ action: paths(ctx.params.token).unsubscribe, button: 'Unsubscribe' }],
    });
  });

  router.get('/subscribe/:token', async (ctx) => {
    const contact = await contactFor(ctx);
    if (!contact) return sendPage(ctx, 404, notFoundPage);
    sendPage(ctx, 200, {
      title: 'Subscribe',
      paragraphs: [`Receive email from ${contact.projectName} at ${contact.email}?`],
      forms: [{ action: paths(ctx.params.token).subscribe, button: 'Subscribe' }],
    });
  });

  router.get('/manage/:token', async (ctx) => {
    const contact = await contactFor(ctx);
    if (!contact) return sendPage(ctx, 404, notFoundPage);
    sendPage(ctx, 200, { ...statePage(contact, ctx.params.token, null), title: 'Your subscription' });
  });

  for (const subscribed of [false, true]) {
    router.post(subscribed ? '/subscribe/:token' : '/unsubscribe/:token', async (ctx) => {
      await drainFormBody(ctx);
      const contactId = openLinkToken(deps.config.secret, 'contact', ctx.params.token);
      const result = contactId ? await emailFeedbackRepository.setPageSubscription(ctx.state.em, contactId, subscribed) : null;
      if (!result) return sendPage(ctx, 404, notFoundPage);
      await deps.eventTriggers.afterEventsRecorded(result.contact.projectId, result.events);
      sendPage(ctx, 200, statePage(result.contact, ctx.params.token, subscribed ? 'subscribed' : 'unsubscribed'));
    });
  }

  return router;
}
