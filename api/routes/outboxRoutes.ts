import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { isUuid, parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { outboxRepository } from '../../db/outbox/outboxRepository';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { outboxListQuery, outboxListResponse, outboxMessageDetailResponse, timeCursor } from '../schemas/outboxSchemas';
import { mailPreviewResponse } from '../schemas/emailRecordSchemas';
import { outboxAttachment, outboxContent, outboxPreview } from '../../services/outbox/outboxContent';
import { describedRoutes } from '../openapi/describedRouter';

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The local outbox (contract 9): mail captured instead of sent when SMTP_URL is unset. */
export function outboxRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  const route = describedRoutes(router, { tag: 'Outbox', access: 'secret' });

  async function page(ctx: AppContext) {
    const query = parseQuery(outboxListQuery, ctx.query);
    const after = query.cursor ? decodeCursor(query.cursor, timeCursor) : null;
    // Newest first; the cursor is the (createdAt, id) of the last message of the previous page.
    const rows = await outboxRepository.listPage(ctx.state.em, ctx.state.project!.id, after, query.limit + 1);
    const hasMore = rows.length > query.limit;
    const data = rows.slice(0, query.limit);
    const last = data[data.length - 1];
    return { data, hasMore, cursor: hasMore && last ? encodeCursor({ t: last.createdAt.toISOString(), id: last.id }) : null };
  }

  route.get(
    '/outbox',
    {
      summary: 'List captured mail',
      description: 'Messages the local outbox captured instead of sending (SMTP_URL unset), newest first, in cursor pages.',
      query: outboxListQuery,
      responses: { 200: { description: 'A page of captured messages', schema: outboxListResponse } },
    },
    ...auth,
    async (ctx) => {
      const result = await page(ctx);
      ctx.body = {
        data: result.data.map((m) => ({ id: m.id, messageId: m.messageId, from: m.from, to: m.to, subject: m.subject, size: m.size, createdAt: m.createdAt })),
        cursor: result.cursor,
        hasMore: result.hasMore,
      } satisfies z.input<typeof outboxListResponse>;
    },
  );

  /** A non-uuid id cannot name a message: 404 as for an unknown one. */
  const messageId = (ctx: AppContext) => (isUuid(ctx.params.id) ? ctx.params.id.toLowerCase() : null);

  route.get(
    '/outbox/:id',
    {
      summary: 'Get a captured message’s parts',
      description:
        'The message as GET /outbox lists it, with its text and HTML parts (as they would have been sent, tracking included), header fields and attachments, ' +
        'read with the MIME parser that reads received mail. To show its HTML without recording an open or click, use GET /outbox/{id}/preview.',
      responses: { 200: { description: 'The message and its parts', schema: outboxMessageDetailResponse } },
    },
    ...auth,
    async (ctx) => {
      const id = messageId(ctx);
      const content = id ? await outboxContent(ctx.state.em, ctx.state.project!.id, id) : null;
      if (!content) throw notFound('message', ctx.params.id);
      const { message: m, ...parts } = content;
      ctx.body = {
        id: m.id,
        messageId: m.messageId,
        from: m.from,
        to: m.to,
        subject: m.subject,
        size: m.size,
        createdAt: m.createdAt,
        ...parts,
      } satisfies z.input<typeof outboxMessageDetailResponse>;
    },
  );

  route.get(
    '/outbox/:id/preview',
    {
      summary: 'Preview a captured message without tracking',
      description:
        'Looking is not opening (contract 21): the message’s HTML without the open-tracking pixel and with every tracked link pointing at its target, and its text part, ' +
        'as GET /emails/{id}/preview answers for an email.',
      responses: { 200: { description: 'The parts to show', schema: mailPreviewResponse } },
    },
    ...auth,
    async (ctx) => {
      const id = messageId(ctx);
      const preview = id ? await outboxPreview(ctx.state.em, ctx.state.project!.id, id, deps.config.secret) : null;
      if (!preview) throw notFound('message', ctx.params.id);
      ctx.body = preview satisfies z.input<typeof mailPreviewResponse>;
    },
  );

  route.get(
    '/outbox/:id/attachments/:index',
    {
      summary: 'Get a captured message’s attachment',
      description: 'The attachment’s bytes with its own content type, always as a download (`Content-Disposition: attachment`). `index` counts from 0.',
      responses: { 200: { description: 'The attachment', contentType: '*/*' } },
    },
    ...auth,
    async (ctx) => {
      const id = messageId(ctx);
      const index = /^\d{1,4}$/.test(ctx.params.index) ? Number(ctx.params.index) : -1;
      const attachment = id && index >= 0 ? await outboxAttachment(ctx.state.em, ctx.state.project!.id, id, index) : null;
      if (!attachment) throw notFound('attachment', ctx.params.index);
      ctx.type = attachment.contentType;
      ctx.set('Content-Disposition', 'attachment');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = attachment.content;
    },
  );

  route.get(
    '/outbox/:id/raw',
    {
      summary: 'Get a captured message',
      responses: { 200: { description: 'The message as it would have been sent (RFC 5322)', contentType: 'message/rfc822' } },
    },
    ...auth,
    async (ctx) => {
      const message = isUuid(ctx.params.id) ? await outboxRepository.find(ctx.state.em, ctx.state.project!.id, ctx.params.id) : null;
      if (!message) throw notFound('message', ctx.params.id);
      ctx.type = 'message/rfc822';
      ctx.set('Content-Disposition', `inline; filename="${message.id}.eml"`);
      ctx.body = Buffer.from(message.raw as Uint8Array);
    },
  );

  route.get(
    '/outbox.html',
    {
      summary: 'Browse captured mail',
      description: 'The outbox as an HTML page, newest first, linking each raw message; `cursor` pages on as in GET /outbox.',
      query: outboxListQuery,
      responses: { 200: { description: 'The page', contentType: 'text/html' } },
    },
    ...auth,
    async (ctx) => {
      const result = await page(ctx);
      const rows = result.data
        .map(
          (m) =>
            `<tr><td>${escapeHtml(m.createdAt.toISOString())}</td><td>${escapeHtml(m.from)}</td><td>${escapeHtml(m.to.join(', '))}</td><td>${escapeHtml(m.subject)}</td><td><a href="/outbox/${m.id}/raw">raw</a></td></tr>`,
        )
        .join('');
      ctx.type = 'html';
      ctx.body = `<!doctype html><html><head><meta charset="utf-8"><title>Mailroom outbox</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}</style></head>
<body><h1>Outbox</h1><p>Mail captured by the local outbox (SMTP_URL is unset), newest first.</p>
<table><thead><tr><th>Captured</th><th>From</th><th>To</th><th>Subject</th><th></th></tr></thead><tbody>${rows || '<tr><td colspan="5">No messages yet.</td></tr>'}</tbody></table>
${result.hasMore ? `<p><a href="/outbox.html?cursor=${encodeURIComponent(result.cursor!)}">Older messages</a></p>` : ''}</body></html>`;
    },
  );

  return router;
}
