import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Router from '@koa/router';
import type { AppContext, AppState } from '../state';
import { describedRoutes } from '../openapi/describedRouter';
import { projectRoot } from '../../lib/codeLocation';

/**
 * Contract 21: no script but the dashboard's own files, no plugin, no framing, no <base>. Styles
 * may be inline (React's `style` props, and later the mail HTML shown in sandboxed iframes, which
 * inherit this policy), images may be data: URLs.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Vite names each built asset after its content's hash, so a name never changes meaning. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** A file name of dist/web/assets/ (no path, no hidden file, not the .gz copy itself). */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

const NOT_BUILT = 'The dashboard has not been built yet. `npm start` builds it (into dist/web/) before the API starts; ' + 'by hand: `npm run build:web`.\n';

function setSecurityHeaders(ctx: AppContext) {
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
}

/** A file's bytes, or undefined when it does not exist. */
async function readIfPresent(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The dashboard (contract 21), a single-page app built by Vite into dist/web/
 * (scripts/build-web.cjs, which `npm start` runs when it is missing or stale): GET /app/ and every
 * path under it answer its index.html, so a reload on any page of it works; its hashed files are
 * served from /app/assets/ for a year, gzip-compressed to clients that take gzip (the build writes
 * the .gz copies). A browser opening the API's root is sent to /app/. Files are read per request,
 * so a rebuild while the API runs is served at once. No authentication: the app's files hold no
 * data; the app signs in through the API like any client.
 */
export function dashboardRoutes(options: { dir?: string } = {}) {
  const dir = options.dir ?? path.join(projectRoot, 'dist', 'web');
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Dashboard', access: 'none' });

  async function serveApp(ctx: AppContext) {
    setSecurityHeaders(ctx);
    const page = await readIfPresent(path.join(dir, 'index.html'));
    if (!page) {
      ctx.status = 503;
      ctx.set('Retry-After', '10');
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = NOT_BUILT;
      return;
    }
    // Always asked again: it names the current build's assets.
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  }

  const appResponses = {
    200: { description: 'The dashboard’s page (it loads its scripts from /app/assets/)', contentType: 'text/html' },
    503: { description: 'The dashboard has not been built: the text says how to build it', contentType: 'text/plain' },
  };

  route.get(
    '/',
    {
      summary: 'Send a browser to the dashboard',
      description: 'A request whose `Accept` names `text/html` is redirected to `/app/`; any other is answered 404.',
      responses: { 302: { description: 'To the dashboard', headers: { Location: { description: '`/app/`' } } } },
    },
    (ctx) => {
      if (!/\btext\/html\b/i.test(ctx.get('Accept'))) return; // 404 from the error handler
      ctx.redirect('/app/');
    },
  );

  route.get('/app/', { summary: 'The dashboard', responses: appResponses }, serveApp);

  // After /app/, which this path would match too (koa's paths allow a trailing slash).
  route.get(
    '/app',
    {
      summary: 'The dashboard, without the trailing slash',
      responses: { 302: { description: 'To `/app/`', headers: { Location: { description: '`/app/`' } } } },
    },
    (ctx) => {
      ctx.redirect('/app/');
    },
  );

  route.get(
    '/app/assets/:file',
    {
      summary: 'A file of the dashboard (script, style sheet, image)',
      description: 'Named after its content’s hash, so cached for a year (`immutable`); gzip-compressed when the client accepts it.',
      responses: { 200: { description: 'The file, of the type its name says', contentType: '*/*' } },
    },
    async (ctx) => {
      const name = ctx.params.file;
      setSecurityHeaders(ctx);
      if (!ASSET_NAME.test(name) || name.endsWith('.gz')) return; // 404 from the error handler
      const file = path.join(dir, 'assets', name);
      const gzipped = ctx.acceptsEncodings('gzip', 'identity') === 'gzip' ? await readIfPresent(`${file}.gz`) : undefined;
      const body = gzipped ?? (await readIfPresent(file));
      if (!body) return;
      ctx.set('Cache-Control', IMMUTABLE);
      ctx.vary('Accept-Encoding');
      if (gzipped) ctx.set('Content-Encoding', 'gzip');
      ctx.type = path.extname(name);
      ctx.body = body;
    },
  );

  route.get(
    '/app/*path',
    {
      summary: 'A page of the dashboard',
      description: 'Every path under `/app/` answers the dashboard’s page (a single-page app: a reload on any of its pages works), but for `/app/assets/`.',
      responses: appResponses,
    },
    async (ctx) => {
      if (ctx.path.startsWith('/app/assets/')) {
        setSecurityHeaders(ctx);
        return; // a file that is not there: 404, not the page
      }
      await serveApp(ctx);
    },
  );

  return router;
}
