import type { Browser } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { launchChromium } from '../support/browser';
import { signUp } from '../support/accounts';
import { ensureDashboardBuilt, expectAccessible, screenshotPath } from '../support/dashboard';

// The forgotten password in the browser: the log-in page's link, the reset mail (a real SMTP
// server receives it), its link to /app/reset-password?token=…, which asks only for the new
// password; then the old password no longer logs in and the new one does.

let smtp: TestSmtpServer;
let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  smtp = await startSmtpServer();
  // The account mail is sent by a Temporal workflow: the worker runs.
  [stack, browser] = await Promise.all([startTestStack({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Mailroom <accounts@mailroom.test>' } }), launchChromium()]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await smtp?.close();
});

test('forgot password: the mailed link opens the page that sets a new one, and only the new one logs in', async () => {
  const account = await signUp(stack.http, `forgetful-${Date.now()}@example.com`);
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });

  await page.goto(`${stack.api.url}/app/login`);
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  // The log-in page has an Email field too: fill the reset page's, once it is shown.
  await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
  await page.getByLabel('Email').fill(account.email);
  // The answer waits for the workflow start: on a loaded machine (the whole suite on 2 cores) that
  // took longer than the 30 s default once, and once no answer came within 90 s: the request and
  // the stack's log then say whether it was sent, answered, or what the API was doing.
  let sent = false;
  page.on('request', (r) => {
    if (r.url().endsWith('/auth/request-password-reset')) sent = true;
  });
  const answer = page
    .waitForResponse((r) => r.url().endsWith('/auth/request-password-reset'), { timeout: 90_000 })
    .catch((err: Error) => {
      const recent = stack.logs
        .slice(-15)
        .map((l) => `${String(l.msg)} ${JSON.stringify({ ...l, msg: undefined, time: undefined, pid: undefined, hostname: undefined })}`);
      throw new Error(`no answer to the reset request (${sent ? 'sent' : 'never sent'}): ${err.message}\nthe stack's last log lines:\n${recent.join('\n')}`);
    });
  await page.getByRole('button', { name: 'Send reset email' }).click();
  expect((await answer).status()).toBe(200);
  // An error shows as an alert: say which, not a timeout.
  await page.getByRole('status').or(page.getByRole('alert')).first().waitFor();
  expect(await page.getByRole('alert').allTextContents()).toEqual([]);
  await expectAccessible(page);

  const mail = await smtp.waitFor((m) => m.envelopeTo.includes(account.email) && m.parsed.subject === 'Reset your Mailroom password');
  const link = /(https?:\/\/\S+\/app\/reset-password\?token=\S+)/.exec(mail.parsed.text ?? '')?.[1];
  expect(link).toBeDefined();

  // The link's page, on this stack: only the new password is asked for.
  const linked = new URL(link!);
  await page.goto(`${stack.api.url}${linked.pathname}${linked.search}`);
  await page.getByRole('heading', { name: 'Choose a new password', level: 1 }).waitFor();
  expect(await page.getByLabel('Token').count()).toBe(0);
  await expectAccessible(page);
  await page.screenshot({ path: screenshotPath('reset-password-390') });
  await page.getByLabel('New password').fill('a brand new password');
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('status').getByText('Your password is changed').waitFor();

  await page.getByRole('link', { name: 'Log in' }).click();
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').getByText('Invalid email or password').waitFor();
  await page.getByLabel('Password').fill('a brand new password');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Create a project', level: 1 }).waitFor();
  await page.close();
}, 180_000);
