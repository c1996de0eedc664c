import fs from 'node:fs';
import type { Page } from 'playwright-core';
import type { AxeResults, Result } from 'axe-core';

/** axe-core's script, read once; run through the DevTools protocol, so the page's CSP (no inline script) does not stop it. */
let axeSource: string | undefined;

/** The WCAG 2.1 A and AA rules (contract 21: no serious or critical violation). */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/**
 * The serious and critical WCAG 2.1 A/AA violations axe-core finds on the page as it is now, each
 * as `rule: what (where)` so a failing test says what to fix.
 */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  const loaded = await page.evaluate('typeof window.axe !== "undefined"');
  if (!loaded) await page.evaluate(axeSource);
  const results = await page.evaluate<AxeResults>(
    `window.axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG_21_AA)} }, resultTypes: ['violations'] })`,
  );
  return results.violations
    .filter((violation: Result) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation: Result) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(' ')).join(', ')})`);
}
