import type { Browser, Page } from 'playwright-core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { startTestStack, type TestStack } from '../support/testStack';
import { launchChromium, recordRequests } from '../support/browser';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { ensureDashboardBuilt, screenshotPath, expectAccessible } from '../support/dashboard';

// Contract 21 and issue 37's Campaigns: compose to ALL with the live recipient count, send now and
// watch the progress reach "sent" with its numbers and the mail in the local outbox; schedule a copy
// and cancel it; by accessible names, axe-core on every page.

const screenshot = (name: string) => screenshotPath(`campaigns-${name}`);

const CONTACTS = 5;

let stack: TestStack;
let browser: Browser;
let account: TestAccount;
let project: TestProject;
/** Lets a send held by holdCampaignEnds end (also after a failure, before the stack stops). */
let releaseCampaignEnds: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ensureDashboardBuilt();
  // A worker runs the campaign's Temporal workflow, one email a second; the test holds the send's end (holdCampaignEnds) to watch its progress.
  [stack, browser] = await Promise.all([startTestStack({ worker: true, env: { CAMPAIGN_RATE_PER_SECOND: '1' } }), launchChromium()]);
  ({ account, project } = await accountWithProject(stack.http));
  for (let i = 0; i < CONTACTS; i++) {
    const plan = i < 2 ? 'pro' : 'free';
    const res = await stack.http.post('/contacts', { email: `reader${i}@example.com`, data: { firstName: `Reader${i}`, plan } }, { key: project.secretKey });
    expect(res.status).toBeLessThan(300);
  }
  const segment = await stack.http.post('/segments', { name: 'Early readers', type: 'STATIC' }, { key: project.secretKey });
  expect(segment.status).toBe(201);
  await stack.http.post(
    `/segments/${segment.body.id}/members`,
    { emails: ['reader0@example.com', 'reader3@example.com', 'reader4@example.com'] },
    { key: project.secretKey },
  );
}, 180_000);

afterAll(async () => {
  await releaseCampaignEnds?.();
  await browser?.close();
  await stack?.stop();
});

const sql = (query: string) => stack.orm.em.fork().execute(query);

/** The advisory lock (one-key form, this test's database only) the end of a held send waits for. */
const CAMPAIGN_END_LOCK = 4_207_011;

/**
 * Holds the end of every campaign send until `releaseCampaignEnds`: a trigger on the update that
 * moves a campaign from SENDING to SENT waits for an advisory lock a transaction of the test's
 * own holds. The send itself goes on (its mail, its sentCount); only its move to SENT waits, so
 * the campaign stays SENDING with its progress for as long as the test needs to see it.
 */
async function holdCampaignEnds(): Promise<void> {
  await sql(`create function test_hold_campaign_end() returns trigger language plpgsql as $fn$
    begin
      perform pg_advisory_xact_lock_shared(${CAMPAIGN_END_LOCK});
      return new;
    end $fn$`);
  await sql(`create trigger test_hold_campaign_end before update of status on campaigns for each row
    when (old.status = 'SENDING' and new.status = 'SENT') execute function test_hold_campaign_end()`);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const done = stack.orm.em.fork().transactional(async (tx: EntityManager) => {
    await tx.execute(`select pg_advisory_xact_lock(${CAMPAIGN_END_LOCK})`);
    holding();
    await released;
  });
  await Promise.race([held, done]);
  releaseCampaignEnds = async () => {
    releaseCampaignEnds = undefined;
    release();
    await done;
    await sql(`drop trigger test_hold_campaign_end on campaigns`);
    await sql(`drop function test_hold_campaign_end()`);
  };
}

/** A full-page screenshot from the top (a page scrolled by the test would show its sticky parts out of place). */
async function capture(page: Page, name: string, { fromTop = true } = {}) {
  if (fromTop) await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: screenshot(name), fullPage: true });
}

/** Nothing sticks out sideways at this width (the page does not scroll horizontally). */
async function expectNoHorizontalOverflow(page: Page) {
  expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(page.viewportSize()!.width);
}

async function logIn(page: Page) {
  await page.goto(`${stack.api.url}/app/login`);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

test('compose to ALL with the live count, send now, watch it reach "sent" with its numbers and the mail arrive; schedule a copy and cancel it', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const requested = recordRequests(page);
  await logIn(page);

  // The list, empty.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Campaigns' }).click();
  await page.getByRole('heading', { name: 'Campaigns', level: 1 }).waitFor();
  await page.getByText('No campaigns yet').waitFor();
  await expectAccessible(page);

  // Compose: content, sender (the local outbox's domain, filled in), audience with its live count.
  await page.getByRole('link', { name: 'New campaign' }).first().click();
  await page.getByRole('heading', { name: 'New campaign', level: 1 }).waitFor();
  expect(await page.getByRole('textbox', { name: 'From', exact: true }).inputValue()).toBe(`news@${OUTBOX_SENDER_DOMAIN}`);
  await page.getByRole('textbox', { name: 'Name', exact: true }).fill('November news');
  await page.getByRole('textbox', { name: 'Subject' }).fill('News for {{firstName}}');
  await page.getByRole('textbox', { name: 'From name' }).fill('The Newsroom');
  // The Body is the CodeMirror editor: replaced as a user does, select all and type.
  await page.getByRole('textbox', { name: 'Body' }).click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText('<h1>Hello {{firstName ?? "there"}}</h1><p>Our <a href="https://example.com/news">November news</a>.</p>');
  const count = page.getByRole('status').filter({ hasText: 'will receive it' });
  await count.getByText(`${CONTACTS} contacts will receive it`).waitFor();
  // The preview: rendered for a contact (POST /templates/preview) in the sandboxed frame, untracked.
  const preview = page.frameLocator('iframe[title="Preview of the campaign’s mail"]');
  await preview.getByRole('heading', { name: /^Hello Reader\d$/ }).waitFor();
  await preview.getByRole('link', { name: 'November news' }).waitFor();
  const frame = page.locator('iframe.mail-preview');
  expect(await frame.getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
  const previewHtml = (await frame.getAttribute('srcdoc')) ?? '';
  expect(previewHtml).toContain('href="https://example.com/news"');
  expect(previewHtml).not.toMatch(/\/t\/[oc]\//);

  // FILTERED: the API's condition tree; the count follows it.
  await page.getByRole('combobox', { name: 'Audience' }).selectOption('FILTERED');
  await page.getByRole('button', { name: 'Insert an example filter' }).click();
  await count.getByText('2 contacts will receive it').waitFor();
  await page.getByText('Reads: data.plan is "pro"').waitFor();
  await page.getByRole('textbox', { name: 'Filter' }).fill('{ not json');
  await count.getByText('Complete the audience').waitFor();
  // SEGMENT: the segment picker; the count is its members'.
  await page.getByRole('combobox', { name: 'Audience' }).selectOption('SEGMENT');
  await count.getByText('Complete the audience').waitFor();
  await page.getByRole('combobox', { name: 'Segment' }).selectOption({ label: 'Early readers (3 contacts)' });
  await count.getByText('3 contacts will receive it').waitFor();
  await page.getByRole('combobox', { name: 'Audience' }).selectOption('ALL');
  await count.getByText(`${CONTACTS} contacts will receive it`).waitFor();
  await expectAccessible(page);
  await capture(page, 'compose-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  // Scrolled to the preview: Chromium paints a frame below the fold blank in a full-page capture.
  await frame.scrollIntoViewIfNeeded();
  await preview.getByRole('link', { name: 'November news' }).waitFor();
  await expectAccessible(page);
  await capture(page, 'compose-390', { fromTop: false });
  await expectNoHorizontalOverflow(page);
  await page.setViewportSize({ width: 1280, height: 900 });

  // Review, then Send now, confirmed with the number of contacts.
  await page.getByRole('button', { name: 'Save and review' }).click();
  await page.getByRole('heading', { name: 'November news', level: 1 }).waitFor();
  await page.getByRole('heading', { name: 'Review and send' }).waitFor();
  await page.getByRole('status').getByText(`${CONTACTS} contacts will receive it`).waitFor();
  await expectAccessible(page);
  await capture(page, 'review-1280');
  await page.getByRole('button', { name: 'Send now' }).click();
  const sendDialog = page.getByRole('dialog', { name: 'Send this campaign now?' });
  await sendDialog.getByText(`sent now to ${CONTACTS} contacts`).waitFor();
  await expectAccessible(page);
  // The send stays SENDING, with its progress, until the test has seen it (however fast or slow it goes).
  await holdCampaignEnds();
  await sendDialog.getByRole('button', { name: 'Send now' }).click();

  // Sending: live progress (the page polls), with Cancel offered.
  const progress = page.getByRole('progressbar', { name: 'Sending' });
  await progress.waitFor();
  await page.getByRole('button', { name: 'Cancel campaign' }).waitFor();
  await eventually(async () => {
    const value = Number(await progress.getAttribute('value'));
    if (!(value > 0)) throw new Error(`progress value ${value}`);
  }, 30_000);
  await expectAccessible(page);
  await capture(page, 'sending-1280');
  await releaseCampaignEnds!();

  // Sent: its numbers.
  await page.getByRole('heading', { name: 'Results' }).waitFor({ timeout: 60_000 });
  await page.locator('.campaign-title').getByText('Sent', { exact: true }).waitFor();
  const results = page.locator('.campaign-stats');
  await results.getByText(`of ${CONTACTS} recipients`).waitFor();
  expect(await results.locator('div', { hasText: 'Sent' }).first().locator('dd').textContent()).toMatch(new RegExp(`^${CONTACTS}of`));
  for (const name of ['Delivered', 'Opened', 'Clicked', 'Bounced']) await results.getByText(name, { exact: true }).waitFor();
  await expectAccessible(page);
  await capture(page, 'sent-1280');

  // The mail arrived: one rendered copy per contact in the local outbox.
  const outbox = await eventually(async () => {
    const res = await stack.http.get('/outbox?limit=50', { key: project.secretKey });
    const subjects = (res.body.data as Array<{ subject: string; to: string[] | string }>).map((m) => m.subject).sort();
    if (subjects.length < CONTACTS) throw new Error(`${subjects.length} in the outbox`);
    return subjects;
  }, 30_000);
  expect(outbox).toEqual(Array.from({ length: CONTACTS }, (_, i) => `News for Reader${i}`));
  const sent = (await stack.http.get('/campaigns?status=SENT', { key: project.secretKey })).body.data[0];
  expect(sent).toMatchObject({ name: 'November news', status: 'SENT', totalRecipients: CONTACTS, sentCount: CONTACTS });

  // A test copy to one address, rendered with that contact's data, counted nowhere.
  await page.getByRole('textbox', { name: 'Test recipient' }).fill('reader1@example.com');
  await page.getByRole('button', { name: 'Send test' }).click();
  await page.getByRole('status').getByText('Test email sent to reader1@example.com').waitFor();
  await eventually(async () => {
    const res = await stack.http.get('/outbox?limit=50', { key: project.secretKey });
    if (!res.body.data.some((m: { subject: string }) => m.subject === '[TEST] News for Reader1')) throw new Error('no test copy yet');
  }, 30_000);
  expect((await stack.http.get(`/campaigns/${sent.id}`, { key: project.secretKey })).body.sentCount).toBe(CONTACTS);

  // A copy, scheduled, then cancelled (through the API, which cancels its Temporal workflow).
  await page.getByRole('button', { name: 'Duplicate' }).click();
  await page.getByRole('heading', { name: 'Edit November news (copy)', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Save and review' }).click();
  await page.getByRole('heading', { name: 'Review and send' }).waitFor();
  await page.getByRole('status').getByText(`${CONTACTS} contacts will receive it`).waitFor();
  await page.getByRole('button', { name: 'Schedule', exact: true }).click();
  const scheduleDialog = page.getByRole('dialog', { name: 'Schedule this campaign?' });
  await scheduleDialog.getByText(`${CONTACTS} contacts now`).waitFor();
  await scheduleDialog.getByRole('button', { name: 'Schedule' }).click();
  await page.getByRole('heading', { name: 'Scheduled', level: 2 }).waitFor();
  await page.getByText(/^Sends on/).waitFor();
  await expectAccessible(page);
  await capture(page, 'scheduled-1280');
  const copyId = new URL(page.url()).pathname.split('/').pop()!;
  expect((await stack.http.get(`/campaigns/${copyId}`, { key: project.secretKey })).body.status).toBe('SCHEDULED');

  await page.getByRole('button', { name: 'Cancel campaign' }).click();
  const cancelDialog = page.getByRole('dialog', { name: 'Cancel this campaign?' });
  await cancelDialog.getByText('will not be sent').waitFor();
  await expectAccessible(page);
  await cancelDialog.getByRole('button', { name: 'Cancel campaign' }).click();
  await page.locator('.campaign-title').getByText('Cancelled', { exact: true }).waitFor();
  expect((await stack.http.get(`/campaigns/${copyId}`, { key: project.secretKey })).body).toMatchObject({ status: 'CANCELLED', sentCount: 0 });

  // The list: both, filtered by status.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Campaigns' }).click();
  await page.getByRole('heading', { name: 'Campaigns', level: 1 }).waitFor();
  const table = page.getByRole('table');
  await table.getByRole('link', { name: 'November news (copy)' }).waitFor();
  await table.getByRole('link', { name: 'November news', exact: true }).waitFor();
  await expectAccessible(page);
  await capture(page, 'list-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await expectAccessible(page);
  await capture(page, 'list-390');
  await expectNoHorizontalOverflow(page);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.getByRole('group', { name: 'Status' }).getByRole('button', { name: 'Sent' }).click();
  await eventually(async () => {
    const names = await table.getByRole('link').allTextContents();
    if (names.join() !== 'November news') throw new Error(names.join());
  }, 10_000);
  await page.getByRole('searchbox').fill('nothing like it');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No campaign matches these filters.').waitFor();

  const origin = new URL(stack.api.url).origin;
  expect(requested.filter((url) => !url.startsWith('about:') && new URL(url).origin !== origin)).toEqual([]);
  await context.close();
}, 240_000);

test('an unknown campaign shows the API’s message and request id', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await logIn(page);
  await page.goto(`${stack.api.url}/app/projects/${project.id}/campaigns/00000000-0000-4000-8000-000000000000`);
  const alert = page.getByRole('alert');
  await alert.getByText('Campaign not found').waitFor();
  expect(await alert.textContent()).toMatch(/Request ID: \S+/);
  await expectAccessible(page);
  await page.close();
}, 60_000);
