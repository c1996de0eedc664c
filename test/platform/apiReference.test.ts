import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';

// Contract 19: GET /docs is a readable reference rendered from /openapi.json, from files the
// service serves itself, so it works offline.

/** Screenshots land in test-results/ (ignored by git), to look at. */
function screenshot(name: string): string {
  const dir = path.join(__dirname, '../../test-results');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, name);
}

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  [stack, browser] = await Promise.all([startTestStack({ worker: false }), launchChromium()]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

test('renders every group of routes in headless Chromium, and no request leaves the service’s origin', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requested = recordRequests(page);
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  const origin = new URL(stack.api.url).origin;

  const res = await page.goto(`${stack.api.url}/docs`);
  expect(res?.status()).toBe(200);
  expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
  await page.getByRole('heading', { name: /Mailroom API/ }).waitFor();

  const document = (await stack.http.get('/openapi.json')).body as { paths: Record<string, Record<string, { tags: string[] }>> };
  const tags = new Set(Object.values(document.paths).flatMap((item) => Object.values(item).flatMap((op) => op.tags)));
  expect(tags.size).toBeGreaterThan(5);
  const paths = new Set(Object.keys(document.paths));
  await page.locator('.opblock-tag').first().waitFor();
  await page.screenshot({ path: screenshot('api-reference.png') });

  // Swagger UI renders the sections near the viewport only: scroll the page through, noting what appears.
  const seenTags = new Set<string>();
  const seenPaths = new Set<string>();
  for (let step = 0; step < 400; step++) {
    // A string: this runs in the page, and the server's TypeScript knows no DOM.
    const seen = await page.evaluate<{ tags: string[]; paths: string[] }>(`({
      tags: [...document.querySelectorAll('.opblock-tag')].map((el) => el.getAttribute('data-tag') ?? ''),
      paths: [...document.querySelectorAll('.opblock-summary-path')].map((el) => el.getAttribute('data-path') ?? ''),
    })`);
    seen.tags.forEach((t) => seenTags.add(t));
    seen.paths.forEach((p) => seenPaths.add(p));
    if ([...tags].every((t) => seenTags.has(t)) && [...paths].every((p) => seenPaths.has(p))) break;
    await page.mouse.wheel(0, 700);
    await page.waitForTimeout(50);
  }
  expect([...tags].filter((t) => !seenTags.has(t))).toEqual([]);
  // Every route of the document is on the page, the main public endpoints among them.
  expect([...paths].filter((p) => !seenPaths.has(p))).toEqual([]);
  expect([...seenPaths]).toEqual(expect.arrayContaining(['/v1/send', '/v1/track', '/v1/verify', '/contacts', '/campaigns']));

  expect(requested.length).toBeGreaterThan(2);
  expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
  expect(consoleErrors).toEqual([]);
  await page.close();
});
