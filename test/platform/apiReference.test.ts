import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';

// Contract 19: GET /docs is a readable reference rendered from /openapi.json, from files the
// service serves itself, so it works offline.

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
  for (const tag of tags) await page.locator('.opblock-tag', { hasText: tag }).first().waitFor();

  // The main public endpoints, each with its path and method.
  await page.locator('.opblock-summary-path', { hasText: '/v1/send' }).first().waitFor();
  await page.locator('.opblock-summary-path', { hasText: '/v1/verify' }).first().waitFor();

  const shots = path.join(__dirname, '../../test-results');
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, 'api-reference.png'), fullPage: false });

  expect(requested.length).toBeGreaterThan(2);
  expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
  expect(consoleErrors).toEqual([]);
  await page.close();
});
