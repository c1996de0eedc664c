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

/**
 * The elements sticking out past the right edge of a 390 px wide page (outermost first, each as
 * tag.class), so a failure names what to fix; scrolling boxes (tables) may hold wider content.
 */
export async function overflowing(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth <= width) return [];
    const found = [];
    for (const element of document.querySelectorAll('body *')) {
      if (element.getBoundingClientRect().right <= width + 0.5) continue;
      // Clipped by a scrolling box, unless positioned out of it (an absolute element whose
      // containing block is outside the box escapes its clip and widens the page).
      let inside = element.parentElement;
      let clipped = false;
      const escapes = getComputedStyle(element).position === 'absolute';
      while (inside) {
        const style = getComputedStyle(inside);
        if (!escapes && ['auto', 'scroll', 'hidden'].includes(style.overflowX)) clipped = true;
        if (found.includes(inside)) clipped = true;
        inside = inside.parentElement;
      }
      if (!clipped) found.push(element);
    }
    if (!found.length) found.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
    return found.slice(0, 8).map((element) => typeof element === 'string' ? element : element.tagName.toLowerCase() + (element.className ? '.' + String(element.className).split(' ').join('.') : '') + ' ' + Math.round(element.getBoundingClientRect().right));
  })()`);
}
