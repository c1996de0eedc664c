import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { notFound } from '../../lib/errors';
import { isUuid, parseQuery } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { outboxRepository } from '../../db/outbox/outboxRepository';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { outboxListQuery, timeCursor } from '../schemas/outboxSchemas';

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The local outbox (contract 9): mail captured instead of sent when SMTP_URL is unset. */
export function outboxRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);

  async function page(ctx: Parameters<Parameters<typeof router.get>[1]>[0]) {
    const query = parseQuery(outboxListQuery, ctx.query);
    const after = query.cursor ? decodeCursor(query.cursor, timeCursor) : null;
    // Newest first; the cursor is the (createdAt, id) of the last message of the previous page.
    const rows = await outboxRepository.listPage(ctx.state.em, ctx.state.project!.id, after, query.limit + 1);
    const hasMore = rows.length > query.limit;
    const data = rows.slice(0, query.limit);
    const last = data[data.length - 1];
    return { data, hasMore, cursor: hasMore && last ? encodeCursor({ t: last.createdAt.toISOString(), id: last.id }) : null };
  }

  router.get('/outbox', ...auth, async (ctx) => {
    const result = await page(ctx);
    ctx.body = {
      data: result.data.map((m) => ({ id: m.id, messageId: m.messageId, from: m.from, to: m.to, subject: m.subject, size: m.size, createdAt: m.createdAt })),
      cursor: result.cursor,
      hasMore: result.hasMore,
    };
  });

  router.get('/outbox/:id/raw', ...auth, async (ctx) => {
    const message = isUuid(ctx.params.id) ? await outboxRepository.find(ctx.state.em, ctx.state.project!.id, ctx.params.id) : null;
    if (!message) throw notFound('message', ctx.params.id);
    ctx.type = 'message/rfc822';
    ctx.set('Content-Disposition', `inline; filename="${message.id}.eml"`);
    ctx.body = Buffer.from(message.raw as Uint8Array);
  });

  router.get('/outbox.html', ...auth, async (ctx) => {
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
  });

  return router;
}
