import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { seriousAccessibilityViolations } from './accessibility';

/**
 * What every dashboard browser test (test/dashboard/) shares: the build the API serves, where
 * screenshots go, and the accessibility check each page passes.
 */

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script, without types to import
export const dashboardBuild = require('../../scripts/build-web.cjs') as {
  ensureWebBuilt: () => void;
  loginRouteJavaScriptBytes: () => number;
  LOGIN_ROUTE_JS_BUDGET: number;
};

/** The API serves dist/web/: built when missing or stale, as `npm start` does. */
export function ensureDashboardBuilt(): void {
  dashboardBuild.ensureWebBuilt();
}

/**
 * The file a screenshot named `name` goes to: test-results/dashboard/ (ignored by git), to look
 * at; docs/images/dashboard/ holds copies of the ones the docs show.
 */
export function screenshotPath(name: string): string {
  const dir = path.join(__dirname, '../../test-results/dashboard');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}

/** Contract 21: axe-core's WCAG 2.1 A/AA rules find no serious or critical violation on the page. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
}
