import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import nodemailer from 'nodemailer';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';
import { launchChromium } from '../support/browser';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestAccount, TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// Contract 21 in Chromium against the real stack (API, worker, local outbox, inbound SMTP): one
// email's page (details, story, HTML / text / raw source), looking is not opening, mail HTML runs
// nothing, received mail with its verdicts and attachments, the outbox like Mailpit.

const screenshot = (name: string) => screenshotPath(`emails-${name}`);

/** A free loopback port, so PUBLIC_URL can name the API's own origin: a pixel left in a preview would then load (the CSP allows 'self'). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The smallest transparent 1×1 GIF: the remote image a received message shows. */
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

let stack: TestStack;
let dns: TestDnsServer;
let receiver: WebhookReceiver;
let browser: Browser;
let account: TestAccount;
let project: TestProject;
let domain: string;

beforeAll(async () => {
  ensureDashboardBuilt();
  const port = await freePort();
  dns = await startTestDnsServer();
  [stack, browser, receiver] = await Promise.all([
    startTestStack({
      worker: true,
      inboundSmtp: true,
      env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' },
    }),
    launchChromium(),
    startWebhookReceiver(),
  ]);
  ({ account, project, domain } = await projectWithVerifiedDomain(stack, dns));
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await receiver?.close();
  await dns?.close();
});

const apiGet = (urlPath: string) => stack.http.get(urlPath, { key: project.secretKey });

/** A browser signed in as the project's owner, through the log-in page; every request of every tab recorded. */
async function signedIn(width = 1280): Promise<{ context: BrowserContext; page: Page; requested: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const requested: string[] = [];
  context.on('request', (request) => requested.push(request.url()));
  const page = await context.newPage();
  await page.goto(`${stack.api.url}/app/login`);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  return { context, page, requested };
}

async function sendEmail(body: Record<string, unknown>): Promise<string> {
  const res = await stack.http.post('/v1/send', { from: `news@${OUTBOX_SENDER_DOMAIN}`, to: 'reader@example.org', ...body }, { key: project.secretKey });
  expect(res.status).toBe(200);
  const emailId = res.body.data.emails[0].email as string;
  await eventually(async () => expect((await apiGet(`/emails/${emailId}`)).body.status).toBe('SENT'), 60_000);
  return emailId;
}

/** The mail's frame, loaded (its load event waits for its images: a pixel would have been fetched by then). */
async function mailFrame(page: Page, name: string): Promise<Frame> {
  const element = await page.getByTitle(name).elementHandle();
  const frame = await element.contentFrame();
  await frame!.waitForLoadState('load');
  return frame!;
}

test('one email: details, story, HTML without tracking; viewing it and clicking its link count nothing; text and raw source', async () => {
  const emailId = await sendEmail({
    subject: 'Spring offer',
    body: `<html><body><h1>Spring is here</h1><p>Our offer: <a href="${receiver.url}/landing">See the offer</a></p></body></html>`,
  });
  const { context, page, requested } = await signedIn();

  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Emails' }).click();
  await page.getByRole('link', { name: 'Spring offer' }).click();
  await page.getByRole('heading', { name: 'Spring offer', level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/app/projects/${project.id}/emails/${emailId}`);
  await page.getByRole('heading', { name: 'Details' }).waitFor();
  await page.getByRole('list', { name: 'Events, newest first' }).getByText('email.sent').waitFor();

  // The HTML, as the untracked preview: no pixel, the link at its target.
  const frame = await mailFrame(page, 'Email content');
  await frame.getByRole('heading', { name: 'Spring is here' }).waitFor();
  expect(await frame.getByRole('link', { name: 'See the offer' }).getAttribute('href')).toBe(`${receiver.url}/landing`);
  expect(await page.getByTitle('Email content').getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('email-1280'), fullPage: true });

  // Clicking the link opens its target in a new tab, directly.
  const [popup] = await Promise.all([context.waitForEvent('page'), frame.getByRole('link', { name: 'See the offer' }).click()]);
  await popup.waitForLoadState('load');
  expect(popup.url()).toBe(`${receiver.url}/landing`);
  await eventually(() => expect(receiver.requests.map((r) => r.path)).toContain('/landing'));
  await popup.close();
  expect(requested.filter((url) => url.includes('/t/o/') || url.includes('/t/c/'))).toEqual([]);

  // Nothing was counted: a real open and a real click through the tracking URLs are then the first and only ones.
  const tracked = (await apiGet(`/emails/${emailId}`)).body;
  const pixel = new URL(/src="([^"]*\/t\/o\/[^"]+\.gif)"/.exec(tracked.html)![1]);
  expect((await stack.http.get(pixel.pathname)).status).toBe(200);
  const opened = (await apiGet(`/emails/${emailId}`)).body;
  expect(opened).toMatchObject({ opens: 1, clicks: 0 });
  expect(opened.events.map((e: { name: string }) => e.name)).toEqual(['email.sent', 'email.opened']);
  const clickUrl = new URL(/href="([^"]*\/t\/c\/[^"]+)"/.exec(tracked.html)![1].replace(/&amp;/g, '&'));
  expect((await stack.http.get(clickUrl.pathname + clickUrl.search)).status).toBe(302);
  const clicked = (await apiGet(`/emails/${emailId}`)).body;
  expect(clicked).toMatchObject({ opens: 1, clicks: 1 });
  expect(clicked.events.map((e: { name: string }) => e.name)).toEqual(['email.sent', 'email.opened', 'email.clicked']);

  // The page shows the story newest first once reloaded.
  await page.reload();
  const story = page.getByRole('list', { name: 'Events, newest first' });
  await story.getByText('email.clicked').waitFor();
  expect(await story.locator('code').allTextContents()).toEqual(['email.clicked', 'email.opened', 'email.sent']);

  // Text and raw source (GET /emails/:id/raw with the session).
  await page.getByRole('tab', { name: 'Text' }).click();
  await page.getByRole('tabpanel').getByText('Spring is here').first().waitFor();
  await page.getByRole('tab', { name: 'Raw source' }).click();
  await page.getByRole('tabpanel').getByText(`Message-ID: <${emailId}@`).waitFor();
  await page.getByRole('button', { name: 'Download .eml' }).waitFor();
  await expectAccessible(page);

  const origin = new URL(stack.api.url).origin;
  // The only other origin: the link the user clicked, in its own tab.
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([`${receiver.url}/landing`]);
  await context.close();

  // At 390 pixels wide.
  const narrow = await signedIn(390);
  await narrow.page.goto(`${stack.api.url}/app/projects/${project.id}/emails/${emailId}`);
  await narrow.page.getByRole('heading', { name: 'Spring offer', level: 1 }).waitFor();
  await mailFrame(narrow.page, 'Email content');
  // In view, so Chromium paints the frame for the full-page shot.
  await narrow.page.getByTitle('Email content').scrollIntoViewIfNeeded();
  await expectAccessible(narrow.page);
  await narrow.page.screenshot({ path: screenshot('email-390'), fullPage: true });
  await narrow.context.close();
}, 180_000);

test('mail HTML with scripts, event handlers and javascript: links runs nothing', async () => {
  receiver.reset();
  const hit = (what: string) => `fetch('${receiver.url}/${what}');parent.postMessage('${what}','*')`;
  const emailId = await sendEmail({
    subject: 'Scripted mail',
    body:
      `<html><head><script>${hit('script')}</script></head><body onload="${hit('onload')}">` +
      `<p>Hostile content</p><img src="data:image/gif;base64,AAAA" alt="broken" onerror="${hit('onerror')}">` +
      `<svg onload="${hit('svg')}"></svg><a href="javascript:${hit('javascript-link')}">Run me</a> ` +
      `<a href="${receiver.url}/after">Afterwards</a></body></html>`,
  });
  const { context, page } = await signedIn();
  // Anything the frame posts to the page is kept (through the DevTools protocol: the page's CSP allows no inline script).
  await page.goto(`${stack.api.url}/app/projects/${project.id}/emails/${emailId}`);
  await page.getByRole('heading', { name: 'Scripted mail', level: 1 }).waitFor();
  await page.evaluate(`window.__posted = []; window.addEventListener('message', (event) => window.__posted.push(String(event.data)))`);
  const frame = await mailFrame(page, 'Email content');
  await frame.getByText('Hostile content').waitFor();
  await frame.getByRole('link', { name: 'Run me' }).click();

  // A request certain to arrive: the plain link, in its own tab. Had anything run, it would have been before.
  const [popup] = await Promise.all([context.waitForEvent('page'), frame.getByRole('link', { name: 'Afterwards' }).click()]);
  await popup.waitForLoadState('load');
  await eventually(() => expect(receiver.requests.map((r) => r.path)).toContain('/after'));
  // The new tab's own favicon request aside, only the plain link reached the receiver.
  expect(receiver.requests.map((r) => r.path).filter((p) => p !== '/favicon.ico')).toEqual(['/after']);
  expect(await page.evaluate('window.__posted')).toEqual([]);
  expect(await page.title()).toContain('Scripted mail');
  await context.close();
}, 120_000);

test('received mail: its verdicts, its sanitised HTML with remote images loaded only when asked, its attachment downloaded', async () => {
  const sender = `sender-${crypto.randomBytes(4).toString('hex')}.test`;
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  dns.setTxt(sender, ['v=spf1 ip4:127.0.0.1 -all']);
  dns.setTxt(`sel1._domainkey.${sender}`, [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]);
  dns.setTxt(`_dmarc.${sender}`, ['v=DMARC1; p=reject']);
  const mailer = nodemailer.createTransport({
    host: '127.0.0.1',
    port: stack.api.smtp.inbound!.port,
    secure: false,
    ignoreTLS: true,
    name: 'mx.sender.test',
    dkim: { domainName: sender, keySelector: 'sel1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
  });
  await mailer.sendMail({
    from: `Alice <alice@${sender}>`,
    to: `support@${domain}`,
    subject: 'Question about my order',
    text: 'Where is my order?',
    html: `<p>Where is my order?</p><img src="${receiver.url}/remote-image.gif" alt="A remote image" width="40" height="40"><p>Thanks, Alice</p>`,
    attachments: [{ filename: 'order.txt', content: 'order 1234', contentType: 'text/plain' }],
  });
  const email = await eventually(async () => {
    const res = await apiGet('/emails?source=INBOUND');
    expect(res.body.data).toHaveLength(1);
    return res.body.data[0];
  }, 60_000);

  receiver.reset();
  receiver.on('/remote-image.gif', (_req, res) => res.writeHead(200, { 'content-type': 'image/gif', 'cache-control': 'no-store' }).end(GIF));
  const { context, page } = await signedIn();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Emails' }).click();
  await page.getByRole('link', { name: 'Question about my order' }).click();
  await page.getByRole('heading', { name: 'Question about my order', level: 1 }).waitFor();
  const verdicts = page.getByRole('region', { name: 'Authentication' });
  await verdicts.getByRole('term').first().waitFor();
  expect(await verdicts.getByRole('term').allTextContents()).toEqual(['SPF', 'DKIM', 'DMARC']);
  expect(await verdicts.getByRole('definition').allTextContents()).toEqual(['pass', 'pass', 'pass']);
  await page.getByText('One remote image is not loaded').waitFor();
  const frame = await mailFrame(page, 'Email content');
  await frame.getByText('Thanks, Alice').waitFor();
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: screenshot('inbound-1280'), fullPage: true });

  // Asked for, the remote image loads (in the API's preview document, same sandbox): its only request.
  expect(receiver.requests.map((r) => r.path)).toEqual([]);
  await page.getByRole('button', { name: 'Load remote images' }).click();
  await page.getByRole('status').getByText('Remote images loaded.').waitFor();
  const withImages = await mailFrame(page, 'Email content');
  await withImages.getByText('Thanks, Alice').waitFor();
  expect(await withImages.evaluate('document.images[0].naturalWidth')).toBe(1);
  expect(receiver.requests.map((r) => r.path)).toEqual(['/remote-image.gif']);
  expect(await page.getByTitle('Email content').getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
  await expectAccessible(page);

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download order.txt' }).click()]);
  expect(download.suggestedFilename()).toBe('order.txt');
  expect(fs.readFileSync(await download.path(), 'utf8')).toBe('order 1234');

  await page.getByRole('tab', { name: 'Headers' }).click();
  await page.getByRole('tabpanel').getByRole('cell', { name: 'DKIM-Signature' }).waitFor();
  await expectAccessible(page);
  expect(email.auth).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
  await context.close();
}, 120_000);

test('the outbox: listed while SMTP_URL is unset, each message as HTML, text and raw source', async () => {
  const emailId = await sendEmail({ subject: 'Caught in the outbox', body: '<p>Hello from the <strong>outbox</strong>.</p>' });
  const { context, page } = await signedIn();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Outbox' }).click();
  await page.getByRole('heading', { name: 'Outbox', level: 1 }).waitFor();
  await page.getByRole('table').getByRole('link', { name: 'Caught in the outbox' }).waitFor();
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('outbox-1280'), fullPage: true });

  await page.getByRole('link', { name: 'Caught in the outbox' }).click();
  await page.getByRole('heading', { name: 'Caught in the outbox', level: 1 }).waitFor();
  const frame = await mailFrame(page, 'Message content');
  await frame.getByText('outbox', { exact: true }).waitFor();
  expect(await frame.locator('img').count()).toBe(0);
  await expectAccessible(page);
  await page.screenshot({ path: screenshot('outbox-message-1280'), fullPage: true });

  await page.getByRole('tab', { name: 'Text' }).click();
  await page.getByRole('tabpanel').getByText('Hello from the outbox.').waitFor();
  await page.getByRole('tab', { name: 'Raw source' }).click();
  await page.getByRole('tabpanel').getByText('Subject: Caught in the outbox').waitFor();
  await expectAccessible(page);

  // The email it was caught for.
  await page.getByRole('link', { name: 'Open its email record' }).click();
  await page.waitForURL(`${stack.api.url}/app/projects/${project.id}/emails/${emailId}`);
  await page.getByRole('heading', { name: 'Caught in the outbox', level: 1 }).waitFor();
  await page.getByRole('heading', { name: 'Story' }).waitFor();
  await context.close();
}, 120_000);

test('an email or caught message that does not exist: the API’s message and request id', async () => {
  const { context, page } = await signedIn();
  for (const pagePath of ['emails', 'outbox']) {
    await page.goto(`${stack.api.url}/app/projects/${project.id}/${pagePath}/00000000-0000-4000-8000-000000000000`);
    const alert = page.getByRole('alert');
    await alert.getByText(/not found/i).waitFor();
    expect(await alert.textContent()).toMatch(/Request ID: \S+/);
    await expectAccessible(page);
  }
  await context.close();
}, 60_000);
