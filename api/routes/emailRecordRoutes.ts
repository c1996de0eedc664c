import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { isUuid, parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { emailRepository, type EmailRow } from '../../db/emails/emailRepository';
import { emailRecordRepository } from '../../db/emails/emailRecordRepository';
import {
  emailCursor,
  emailDetailResponse,
  emailListQuery,
  emailListResponse,
  emailPreviewDocumentQuery,
  mailPreviewResponse,
} from '../schemas/emailRecordSchemas';
import { describedRoutes } from '../openapi/describedRouter';
import { serializeEmail, serializeEmailWithEvents } from '../presenters/emailPresenter';
import { sentMessage } from '../../services/sending/sentMessage';
import { receivedAttachment, receivedRaw } from '../../services/inbound/receivedContent';
import { emailContent, emailPreview } from '../../services/emails/emailViews';

/**
 * The preview document's own policy: images from anywhere (the viewer asked for them), inline
 * styles, nothing else; sandboxed (no script, an opaque origin) even when opened on its own, and
 * framed only by this origin (the dashboard). Links open a new tab, escaping the sandbox.
 */
const PREVIEW_DOCUMENT_POLICY =
  "default-src 'none'; img-src * data:; style-src 'unsafe-inline'; font-src data:; base-uri 'none'; form-action 'none'; " +
  "frame-ancestors 'self'; sandbox allow-popups allow-popups-to-escape-sandbox";

/** `<base target="_blank">` first in the document, so a link without its own target opens a new tab. */
function withLinksInNewTab(html: string): string {
  const base = '<base target="_blank">';
  const head = /<head(\s[^>]*)?>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + base + html.slice(head.index + head[0].length);
  return `<!doctype html><meta charset="utf-8">${base}${html}`;
}

/**
 * A frame's request carries the session cookie but cannot carry `X-Project-Id`: for the preview
 * document, a session names its project with `?projectId=` (membership is checked as for the
 * header). A key-authenticated request ignores it.
 */
const projectIdFromQuery: Middleware<AppState> = async (ctx, next) => {
  const { projectId } = parseQuery(emailPreviewDocumentQuery, ctx.query);
  if (projectId && !ctx.get('Authorization') && !ctx.get('X-Project-Id')) ctx.request.headers['x-project-id'] = projectId;
  await next();
};

/** GET /emails, /emails/:id, /emails/:id/preview, /emails/:id/raw, /emails/:id/attachments/:index (contracts 20, 21), secret key or session. */
export function emailRecordRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  const route = describedRoutes(router, { tag: 'Emails', access: 'secret' });

  /** A non-uuid id cannot name an email, and another project's is not shown: both 404. */
  async function loadEmail(ctx: AppContext): Promise<EmailRow> {
    const id = ctx.params.id;
    const email = isUuid(id) ? await emailRepository.findById(ctx.state.em, ctx.state.project!.id, id.toLowerCase()) : null;
    if (!email) throw notFound('email', id);
    return email;
  }

  route.get(
    '/emails',
    {
      summary: 'List emails',
      description: 'Sent and received emails, newest first, in cursor pages; filters combine.',
      query: emailListQuery,
      responses: { 200: { description: 'A page of emails', schema: emailListResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(emailListQuery, ctx.query);
      const after = q.cursor ? decodeCursor(q.cursor, emailCursor) : undefined;
      const page = await emailRecordRepository.page(
        ctx.state.em,
        ctx.state.project!.id,
        { status: q.status, source: q.source, contactId: q.contactId, campaignId: q.campaignId, to: q.to },
        q.limit,
        after,
      );
      ctx.body = {
        data: page.emails.map(serializeEmail),
        cursor: page.hasMore && page.last ? encodeCursor({ ...page.last }) : null,
        hasMore: page.hasMore,
      } satisfies z.input<typeof emailListResponse>;
    },
  );

  route.get(
    '/emails/:id',
    {
      summary: 'Get an email',
      description:
        'The record and its own events, oldest first, with its `html` and `text` parts: a sent email’s exactly as handed over, tracking included ' +
        '(to show one without recording an open or click, use GET /emails/{id}/preview); a received email’s text, sanitised HTML, header fields and attachments.',
      responses: { 200: { description: 'The email', schema: emailDetailResponse } },
    },
    ...auth,
    async (ctx) => {
      const email = await loadEmail(ctx);
      ctx.body = serializeEmailWithEvents(email, await emailRecordRepository.events(ctx.state.em, email), await emailContent(ctx.state.em, email));
    },
  );

  route.get(
    '/emails/:id/preview',
    {
      summary: 'Preview an email without tracking',
      description:
        'Looking is not opening (contract 21): the email’s HTML without the open-tracking pixel and with every tracked link pointing at its own target, ' +
        'and its text part, so showing it, and following its links, records no open and no click and starts no automation. ' +
        'Reading this records nothing either. A received email’s HTML is the sanitised one of GET /emails/{id}; `remoteImages` counts the images it would fetch from other hosts.',
      responses: { 200: { description: 'The parts to show', schema: mailPreviewResponse } },
    },
    ...auth,
    async (ctx) => {
      const email = await loadEmail(ctx);
      ctx.body = (await emailPreview(ctx.state.em, email, deps.config.secret)) satisfies z.input<typeof mailPreviewResponse>;
    },
  );

  route.get(
    '/emails/:id/preview.html',
    {
      summary: 'Preview an email with its remote images',
      description:
        'The HTML of GET /emails/{id}/preview as a document of its own, for a viewer who asked to see its remote images (contract 21: received mail’s remote images load only when asked): ' +
        'its Content-Security-Policy lets it load images from any host and nothing else (no script, no style sheet from elsewhere, sandboxed, framed only by this origin). ' +
        'A browser frame cannot send `X-Project-Id`: with a session, `projectId` names the project instead.',
      query: emailPreviewDocumentQuery,
      responses: { 200: { description: 'The email’s HTML as a document', contentType: 'text/html' } },
    },
    projectIdFromQuery,
    ...auth,
    async (ctx) => {
      const email = await loadEmail(ctx);
      const { html } = await emailPreview(ctx.state.em, email, deps.config.secret);
      ctx.set('Content-Security-Policy', PREVIEW_DOCUMENT_POLICY);
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.set('Referrer-Policy', 'no-referrer');
      ctx.set('Cache-Control', 'private, no-store');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = withLinksInNewTab(html ?? '');
    },
  );

  route.get(
    '/emails/:id/raw',
    {
      summary: 'Get an email’s raw message',
      description:
        'The message as received, or a sent message built again from its record exactly as it was handed over (DKIM signature included). ' +
        '404 once retention removed what it is made from.',
      responses: { 200: { description: 'The message (RFC 5322)', contentType: 'message/rfc822' } },
    },
    ...auth,
    async (ctx) => {
      const email = await loadEmail(ctx);
      const raw = email.source === 'INBOUND' ? await receivedRaw(ctx.state.em, email) : await sentMessage(ctx.state.em, email);
      if (!raw) throw notFound('message', email.id);
      ctx.type = 'message/rfc822';
      ctx.set('Content-Disposition', `inline; filename="${email.id}.eml"`);
      ctx.body = raw;
    },
  );

  route.get(
    '/emails/:id/attachments/:index',
    {
      summary: 'Get a received email’s attachment',
      description: 'The attachment’s bytes with its own content type, always as a download (`Content-Disposition: attachment`). `index` counts from 0.',
      responses: { 200: { description: 'The attachment', contentType: '*/*' } },
    },
    ...auth,
    async (ctx) => {
      const email = await loadEmail(ctx);
      const index = /^\d{1,4}$/.test(ctx.params.index) ? Number(ctx.params.index) : -1;
      const attachment = email.source === 'INBOUND' && index >= 0 ? await receivedAttachment(ctx.state.em, email, index) : null;
      if (!attachment) throw notFound('attachment', ctx.params.index);
      ctx.type = attachment.contentType;
      // Never rendered inline by a browser: a received attachment is whatever the sender made it.
      ctx.set('Content-Disposition', 'attachment');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = attachment.content;
    },
  );

  return router;
}
