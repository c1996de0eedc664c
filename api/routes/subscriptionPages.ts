import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { readDecodedBody } from '../http/bodyDecoding';
import { openLinkToken } from '../../mail/links/signedLinks';
import { emailFeedbackRepository, type PageContact } from '../../db/emails/emailFeedbackRepository';
import { setPageSubscription } from '../../services/contacts/contactEditing';
import { notFoundPage, sendPage, type PageContent } from '../pages/publicPage';
import { describedRoutes, type ResponseDoc } from '../openapi/describedRouter';
import { subscriptionPageForm } from '../schemas/subscriptionPageSchemas';

const html = (description: string): ResponseDoc => ({ description, contentType: 'text/html' });
const notFoundPageResponse = html('A page saying the link is not valid (a forged or damaged token, or a deleted contact)');

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
  const route = describedRoutes(router, { tag: 'Subscription pages', access: 'none' });

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

  route.get(
    '/unsubscribe/:token',
    {
      summary: 'Unsubscribe page',
      description: 'The page behind `unsubscribeUrl`: asks to confirm. It changes nothing (link scanners fetch every link); its button POSTs.',
      responses: { 200: html('The page with its Unsubscribe button'), 404: notFoundPageResponse },
    },
    async (ctx) => {
      const contact = await contactFor(ctx);
      if (!contact) return sendPage(ctx, 404, notFoundPage);
      sendPage(ctx, 200, {
        title: 'Unsubscribe',
        paragraphs: [`Stop sending marketing email from ${contact.projectName} to ${contact.email}?`],
        forms: [{ action: paths(ctx.params.token).unsubscribe, button: 'Unsubscribe' }],
      });
    },
  );

  route.get(
    '/subscribe/:token',
    {
      summary: 'Subscribe page',
      description: 'The page behind `subscribeUrl`: asks to confirm. It changes nothing; its button POSTs.',
      responses: { 200: html('The page with its Subscribe button'), 404: notFoundPageResponse },
    },
    async (ctx) => {
      const contact = await contactFor(ctx);
      if (!contact) return sendPage(ctx, 404, notFoundPage);
      sendPage(ctx, 200, {
        title: 'Subscribe',
        paragraphs: [`Receive email from ${contact.projectName} at ${contact.email}?`],
        forms: [{ action: paths(ctx.params.token).subscribe, button: 'Subscribe' }],
      });
    },
  );

  route.get(
    '/manage/:token',
    {
      summary: 'Subscription page',
      description: 'The page behind `manageUrl`: says whether the contact is subscribed, with a button to change it.',
      responses: { 200: html('The page'), 404: notFoundPageResponse },
    },
    async (ctx) => {
      const contact = await contactFor(ctx);
      if (!contact) return sendPage(ctx, 404, notFoundPage);
      sendPage(ctx, 200, { ...statePage(contact, ctx.params.token, null), title: 'Your subscription' });
    },
  );

  for (const subscribed of [false, true]) {
    route.post(
      subscribed ? '/subscribe/:token' : '/unsubscribe/:token',
      {
        summary: subscribed ? 'Subscribe' : 'Unsubscribe',
        description: subscribed
          ? 'The Subscribe page’s button: subscribes the contact again (records `contact.subscribed` when it changes).'
          : 'The Unsubscribe page’s button, or a mail client’s one-click unsubscribe (RFC 8058, `List-Unsubscribe-Post`): ' +
            'unsubscribes the contact from marketing email (records `contact.unsubscribed` when it changes).',
        body: {
          schema: subscriptionPageForm,
          contentType: 'application/x-www-form-urlencoded',
          required: false,
        },
        responses: { 200: html('A page saying what the subscription now is'), 404: notFoundPageResponse },
      },
      async (ctx) => {
        await drainFormBody(ctx);
        const contactId = openLinkToken(deps.config.secret, 'contact', ctx.params.token);
        const result = contactId ? await setPageSubscription(deps, ctx.state.em, contactId, subscribed) : null;
        if (!result) return sendPage(ctx, 404, notFoundPage);
        sendPage(ctx, 200, statePage(result.contact, ctx.params.token, subscribed ? 'subscribed' : 'unsubscribed'));
      },
    );
  }

  return router;
}
