// @ts-check
/**
 * The dashboard's build (contract 21): `node scripts/build-web.cjs` (which `npm start` runs when
 * dist/web/ is missing or stale) writes it into dist/web/, which the API serves at /app/
 * (api/routes/dashboardRoutes.ts). `npx vite --config web/vite.config.mjs` serves it with live
 * reload on http://localhost:5173/app/, passing every other path to the API at MAILROOM_URL
 * (default http://localhost:8080), so the session cookie stays on one origin there too.
 *
 * Vite compiles TSX itself (oxc, the automatic JSX runtime); @vitejs/plugin-react would add only
 * Fast Refresh in the dev server (docs/decisions.md, "The dashboard").
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const webDir = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: webDir,
  base: '/app/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    // Which files each entry and lazy page loads: the build prints the log-in route's JavaScript from it.
    manifest: true,
    target: 'es2022',
    // The API serves the files with gzip beside them (scripts/build-web.cjs writes the .gz files).
    reportCompressedSize: false,
    rolldownOptions: {
      onwarn(warning, warn) {
        // React packages mark their client modules "use client", which means nothing outside a server-components build.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  server: {
    proxy: {
      // Everything but the dashboard itself (and Vite's own files, which live under /app/ too).
      '^/(?!app(/|$))': { target: process.env.MAILROOM_URL ?? 'http://localhost:8080', changeOrigin: false },
    },
  },
});
