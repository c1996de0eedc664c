import crypto from 'node:crypto';
import type { ParameterizedContext } from 'koa';

/**
 * The small HTML pages recipients reach from a mail (unsubscribe, subscribe, manage, a bad
 * tracking link). Self-contained: one inline style block allowed by its hash, no scripts, no
 * external resources, forms that post only back to this origin, and nothing framed or cached.
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const STYLE = `body{font-family:system-ui,-apple-system,sans-serif;background:#f5f5f4;color:#1c1917;margin:0;padding:3rem 1rem}
main{max-width:32rem;margin:0 auto;background:#fff;border-radius:.5rem;padding:2rem;box-shadow:0 1px 3px rgba(0,0,0,.1)}
h1{font-size:1.4rem;margin:0 0 1rem}p{line-height:1.5}form{margin-top:1.5rem}
button{font:inherit;padding:.6rem 1.2rem;border-radius:.375rem;border:1px solid #1c1917;background:#1c1917;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1c1917}`;

const STYLE_HASH = crypto.createHash('sha256').update(STYLE).digest('base64');

export const PAGE_CSP = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; img-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;

export interface PageForm {
  /** A path on this origin. */
  action: string;
  button: string;
  secondary?: boolean;
}

export interface PageContent {
  title: string;
  /** Paragraphs of plain text; escaped here. */
  paragraphs: string[];
  forms?: PageForm[];
}

export function renderPage(content: PageContent): string {
  const paragraphs = content.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n');
  const forms = (content.forms ?? [])
    .map(
      (f) =>
        `<form method="post" action="${escapeHtml(f.action)}"><button type="submit"${f.secondary ? ' class="secondary"' : ''}>${escapeHtml(f.button)}</button></form>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(content.title)}</title><style>${STYLE}</style></head>
<body><main><h1>${escapeHtml(content.title)}</h1>
${paragraphs}
${forms}
</main></body></html>`;
}

/** Answers a page with the headers every public page carries. */
export function sendPage(ctx: ParameterizedContext, status: number, content: PageContent): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Content-Security-Policy', PAGE_CSP);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = renderPage(content);
}

export const notFoundPage: PageContent = {
  title: 'Link not found',
  paragraphs: ['This link is not valid or no longer exists. If you copied it from an email, check that you copied all of it.'],
};
