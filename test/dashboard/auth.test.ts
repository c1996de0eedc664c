import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { dashboardBuild, ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// Contract 21: the dashboard at /app/, served by the API from its own build; sign up, a project and
// its keys shown once, log out and in again; accessible names as the interface; axe-core's WCAG 2.1
// A/AA rules with no serious or critical violation; nothing loaded from another origin.

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  // The API serves dist/web/; build it when missing or stale, as `npm start` does.
  ensureDashboardBuilt();
  [stack, browser] = await Promise.all([startTestStack({ worker: false }), launchChromium()]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** Everything the page keeps in the browser's storage (contract 21: never a secret key). */
async function browserStorage(page: Page, context: BrowserContext): Promise<string> {
  // A string, not a function: the tests' tsconfig has no DOM types.
  const inPage = await page.evaluate<string>(`(async () => {
    const entries = (storage) => Object.keys(storage).map((key) => key + '=' + storage.getItem(key));
    const databases = await indexedDB.databases();
    return [...entries(localStorage), ...entries(sessionStorage), document.cookie, ...databases.map((db) => db.name || '')].join('\\n');
  })()`);
  const cookies = (await context.cookies()).map((cookie) => `${cookie.name}=${cookie.value}`).join('\n');
  return `${inPage}\n${cookies}`;
}

test('sign up, create a project and see its keys once, log out, log in again: by accessible names, with no serious axe violation', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const requested = recordRequests(page);
  const email = `dash-${Date.now()}@example.com`;
  const password = 'correct horse battery';

  // /app/ without a session: the log-in page.
  await page.goto(`${stack.api.url}/app/`);
  await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('login-1280') });

  await page.getByRole('link', { name: 'Sign up' }).click();
  await page.getByRole('heading', { name: 'Sign up', level: 1 }).waitFor();
  await expectAccessible(page);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign up' }).click();

  // A new account has no project: the page that creates one.
  await page.getByRole('heading', { name: 'Create a project', level: 1 }).waitFor();
  await expectAccessible(page);
  await page.getByLabel('Name').fill('Newsletter');
  await page.getByRole('button', { name: 'Create project' }).click();

  // The keys, once, with copy buttons.
  await page.getByRole('heading', { name: 'Newsletter', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Copy secret key' }).waitFor();
  await page.getByRole('button', { name: 'Copy public key' }).waitFor();
  const shownKeys = await page.locator('code.key').allTextContents();
  const secretKey = shownKeys.find((key) => key.startsWith('sk_'))!;
  expect(secretKey).toMatch(/^sk_\S{20,}$/);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('project-keys-1280') });
  // The key shown works, and the dashboard kept it nowhere.
  expect((await stack.http.get('/contacts?limit=1', { key: secretKey })).status).toBe(200);
  expect(await browserStorage(page, context)).not.toContain(secretKey);

  await page.getByRole('link', { name: 'Continue to Newsletter' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  const projectPath = new URL(page.url()).pathname;
  expect(projectPath).toMatch(/^\/app\/projects\/[0-9a-f-]{36}$/);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Overview' }).waitFor();
  await nav.getByRole('link', { name: 'Developers' }).waitFor();
  expect(await page.getByRole('combobox', { name: 'Project' }).locator('option:checked').textContent()).toBe('Newsletter');
  await page.getByRole('heading', { name: 'Get set up' }).waitFor();
  await page.getByRole('heading', { name: 'Recent activity' }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('overview-1280'), fullPage: true });

  // Developers: the secret key only as its hint; regenerating asks first, then shows the new keys once.
  await nav.getByRole('link', { name: 'Developers' }).click();
  await page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
  expect(await page.locator('code.key').allTextContents()).not.toContain(secretKey);
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Regenerate keys' }).click();
  const dialog = page.getByRole('dialog', { name: 'Regenerate the keys?' });
  await dialog.waitFor();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Regenerate keys' }).click();
  await page.getByRole('button', { name: 'Copy secret key' }).waitFor();
  const newSecretKey = (await page.locator('code.key').allTextContents()).find((key) => key.startsWith('sk_'))!;
  expect(newSecretKey).not.toBe(secretKey);
  expect((await stack.http.get('/contacts?limit=1', { key: secretKey })).status).toBe(401);
  expect((await stack.http.get('/contacts?limit=1', { key: newSecretKey })).status).toBe(200);
  expect(await browserStorage(page, context)).not.toContain(newSecretKey);
  await page.screenshot({ path: screenshotPath('developers-1280'), fullPage: true });

  // Emails: one sent through the API with the new key is listed (queued: this stack runs no worker).
  const sent = await stack.http.post(
    '/v1/send',
    { from: `hello@${OUTBOX_SENDER_DOMAIN}`, to: 'ada@example.com', subject: 'Hello from the dashboard test', body: '<p>Hi</p>' },
    { key: newSecretKey },
  );
  expect(sent.status).toBe(200);
  await nav.getByRole('link', { name: 'Emails' }).click();
  await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
  await page.getByRole('table').getByText('Hello from the dashboard test').waitFor();
  await page.getByRole('searchbox').fill('nobody@example.com');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No email matches these filters.').waitFor();
  await expectAccessible(page);

  // Domains: one added shows the DNS records to publish, each with a copy button.
  await nav.getByRole('link', { name: 'Domains' }).click();
  await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
  await page.getByRole('textbox', { name: 'Domain' }).fill('mail.example.com');
  await page.getByRole('button', { name: 'Add domain' }).click();
  await page.getByRole('heading', { name: 'mail.example.com' }).waitFor();
  await page.getByRole('button', { name: 'Copy DKIM value' }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('domains-1280'), fullPage: true });

  await nav.getByRole('link', { name: 'Activity' }).click();
  await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
  await page.getByRole('heading', { name: 'Feed' }).waitFor();
  await expectAccessible(page);

  // Settings: the project's name, changed through the API's own PATCH, shows in the "Project" control.
  await nav.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  await page.getByRole('table').getByText(email).waitFor();
  await expectAccessible(page);
  await page.getByRole('textbox', { name: 'Name' }).fill('Weekly newsletter');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').getByText('Saved').waitFor();
  await page.getByRole('combobox', { name: 'Project' }).getByRole('option', { name: 'Weekly newsletter' }).waitFor({ state: 'attached' });
  await page.screenshot({ path: screenshotPath('settings-1280'), fullPage: true });

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();

  // The project's address without a session: log in, and land back on it.
  await page.goto(`${stack.api.url}${projectPath}`);
  await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toBe(projectPath);

  const origin = new URL(stack.api.url).origin;
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  await context.close();
}, 120_000);

test('a refused log-in shows the API’s message and request id; the form checks fields with the API’s own schema', async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await page.goto(`${stack.api.url}/app/login`);
  await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();

  // Checked in the browser by the API's schema (shared/accountSchemas.ts), before any request.
  await page.getByLabel('Email').fill('not-an-address');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByText('Invalid email address').waitFor();
  await page.getByText('Password is required').waitFor();
  await expectAccessible(page);

  await page.getByLabel('Email').fill('nobody@example.com');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Log in' }).click();
  const alert = page.getByRole('alert');
  await alert.getByText('Invalid email or password').waitFor();
  expect(await alert.textContent()).toMatch(/Request ID: \S+/);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('login-refused-390') });
  await page.close();
}, 60_000);

test('the API serves the build: the page on every /app/ path with its CSP, immutable gzip assets, a browser sent from / to /app/', async () => {
  const home = await stack.http.get('/', { headers: { Accept: 'text/html,application/xhtml+xml' } });
  expect(home.status).toBe(302);
  expect(home.headers.get('location')).toBe('/app/');
  expect((await stack.http.get('/', { headers: { Accept: 'application/json' } })).status).toBe(404);

  for (const pagePath of ['/app/', '/app/login', '/app/projects/00000000-0000-4000-8000-000000000000/contacts']) {
    const res = await stack.http.get(pagePath);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      expect(csp).toContain(directive);
    }
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  }

  const page = (await stack.http.get('/app/')).text;
  const script = /<script type="module" crossorigin src="(\/app\/assets\/[^"]+\.js)"/.exec(page)?.[1];
  expect(script).toBeDefined();
  const asset = await fetch(`${stack.api.url}${script}`, { headers: { 'Accept-Encoding': 'gzip' } });
  expect(asset.status).toBe(200);
  expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  expect(asset.headers.get('content-encoding')).toBe('gzip');
  expect(asset.headers.get('content-type')).toContain('javascript');
  expect((await stack.http.get('/app/assets/missing-0000.js')).status).toBe(404);

  // Contract 21: the log-in route's JavaScript, gzip-compressed as served, within 500 KB.
  expect(dashboardBuild.loginRouteJavaScriptBytes()).toBeLessThanOrEqual(dashboardBuild.LOGIN_ROUTE_JS_BUDGET);
});
