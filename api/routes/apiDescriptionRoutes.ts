import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Router from '@koa/router';
import type { AppState } from '../state';
import { describedRoutes } from '../openapi/describedRouter';
import { z } from '../schemas/zod';

/** Swagger UI's own files, served from node_modules: the reference works offline (contract 19). */
const SWAGGER_UI_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const INITIALIZER = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#reference',
    deepLinking: true,
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    docExpansion: 'list',
    tryItOutEnabled: false,
    withCredentials: true,
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Mailroom API reference</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<style>body { margin: 0; } .swagger-ui .topbar { display: none; }</style>
</head>
<body>
<main id="reference" aria-label="Mailroom API reference"></main>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/reference.js"></script>
</body>
</html>
`;

// Scripts only from this origin; Swagger UI sets inline styles, and fetches only the document.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * GET /openapi.json, the API description built at start (api/openapi/apiDocument.ts), and GET
 * /docs, a reference rendered from it by Swagger UI. No authentication: the description holds no
 * project data.
 */
export function apiDescriptionRoutes(apiDocument: () => object) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'API description', access: 'none' });
  const assetDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));

  route.get(
    '/openapi.json',
    { summary: 'This API description (OpenAPI 3.1)', responses: { 200: { description: 'The document', schema: z.record(z.unknown()) } } },
    (ctx) => {
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = apiDocument();
    },
  );

  route.get(
    '/docs',
    { summary: 'The API reference, readable in a browser', responses: { 200: { description: 'An HTML page', contentType: 'text/html' } } },
    (ctx) => {
      ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = PAGE;
    },
  );

  route.get(
    '/docs/:file',
    {
      summary: 'A file of the API reference page (its script, style sheet and icon)',
      responses: { 200: { description: 'The file', contentType: 'application/octet-stream' } },
    },
    async (ctx) => {
      const file = ctx.params.file;
      if (file === 'reference.js') {
        ctx.type = 'application/javascript; charset=utf-8';
        ctx.body = INITIALIZER;
        return;
      }
      const type = SWAGGER_UI_FILES[file];
      if (!type) return; // 404 from the error handler
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.type = type;
      ctx.body = await readFile(path.join(assetDir, file));
    },
  );
  return router;
}
