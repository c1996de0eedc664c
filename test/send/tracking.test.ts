import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { emailRow, eventsOf, insertSentEmail } from '../support/emailFixtures';
import { emailLinks, signLinkToken } from '../../mail/links/signedLinks';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';

let stack: TestStack;
let project: TestProject;
const triggered: RecordedEventsBatch[] = [];

beforeAll(async () => {
  stack = await startTestStack({ worker: false, env: { RATE_LIMIT_PER_MINUTE: '5' } });
  ({ project } = await accountWithProject(stack.http));
  stack.eventTriggers.subscribe(async (batch) => void triggered.push(batch));
});
afterAll(() => stack?.stop());

const GIF_BYTES = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

function linksFor(fixture: { emailId: string; contactId: string }) {
  const links = emailLinks(stack.config.publicUrl, stack.config.secret, fixture);
  const path = (url: string) => url.slice(stack.config.publicUrl.length);
  return { pixel: path(links.openPixelUrl), click: (target: string) => path(links.clickUrl(target)) };
}

async function fetchPixel(path: string) {
  const res = await fetch(stack.api.url + path);
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

function expectPixel(res: Awaited<ReturnType<typeof fetchPixel>>) {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/gif');
  expect(res.headers.get('cache-control')).toContain('no-store');
  expect(res.headers.get('cache-control')).toContain('no-cache');
  expect(res.bytes.equals(GIF_BYTES)).toBe(true);
}

const names = (events: Array<Record<string, any>>) => events.map((e) => e.name);

describe('open pixel', () => {
  it('answers a transparent GIF, marks the email OPENED and records email.opened once while opens accumulate', async () => {
    const fixture = await insertSentEmail(stack, project.id, { subject: 'Weekly news' });
    const { pixel } = linksFor(fixture);
    expect(pixel).toMatch(/^\/t\/o\/[0-9a-f-]{36}\.[A-Za-z0-9_-]+\.gif$/);

    const before = Date.now();
    expectPixel(await fetchPixel(pixel));
    let row = await emailRow(stack, fixture.emailId);
    expect(row).toMatchObject({ status: 'OPENED', opens: 1 });
    const firstOpenedAt = new Date(row.opened_at).getTime();
    expect(firstOpenedAt).toBeGreaterThanOrEqual(before - 1000);

    // Prefetching proxies and readers opening again: counted, but the first time and event stay.
    for (let i = 0; i < 3; i++) expectPixel(await fetchPixel(pixel));
    row = await emailRow(stack, fixture.emailId);
    expect(row).toMatchObject({ status: 'OPENED', opens: 4 });
    expect(new Date(row.opened_at).getTime()).toBe(firstOpenedAt);

    const events = await eventsOf(stack, { emailId: fixture.emailId });
    expect(events).toEqual([
      {
        name: 'email.opened',
        source: 'SYSTEM',
        email_id: fixture.emailId,
        contact_id: fixture.contactId,
        data: { emailId: fixture.emailId, subject: 'Weekly news', templateId: null, campaignId: null },
      },
    ]);
    // The event is visible through the API and was handed to the triggers.
    const listed = await stack.http.get(`/events?contactId=${fixture.contactId}`, { key: project.secretKey });
    expect(listed.body.data.map((e: any) => e.name)).toEqual(['email.opened']);
    expect(
      triggered
        .flatMap((b) => b.events)
        .filter((e) => e.contactId === fixture.contactId)
        .map((e) => e.name),
    ).toEqual(['email.opened']);
  });

  it('answers the same GIF for a forged, malformed or foreign token and records nothing', async () => {
    const fixture = await insertSentEmail(stack, project.id);
    const { pixel } = linksFor(fixture);
    const forged = pixel.replace(/\.([A-Za-z0-9_-]+)\.gif$/, (_, mac: string) => `.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}.gif`);
    const contactToken = signLinkToken(stack.config.secret, 'contact', fixture.emailId); // right id, wrong purpose
    for (const path of [forged, `/t/o/${fixture.emailId}.gif`, '/t/o/nonsense.gif', `/t/o/${contactToken}.gif`, pixel.replace('.gif', '.png')]) {
      expectPixel(await fetchPixel(path));
    }
    expect(await emailRow(stack, fixture.emailId)).toMatchObject({ status: 'SENT', opens: 0, opened_at: null });
    expect(await eventsOf(stack, { emailId: fixture.emailId })).toEqual([]);
  });

  it('never moves a bounced, complained, failed or suppressed email, but still counts the open', async () => {
    for (const status of ['BOUNCED', 'COMPLAINED', 'FAILED', 'SUPPRESSED', 'CLICKED']) {
      const fixture = await insertSentEmail(stack, project.id, { status });
      expectPixel(await fetchPixel(linksFor(fixture).pixel));
      expect(await emailRow(stack, fixture.emailId)).toMatchObject({ status, opens: 1 });
    }
  });

  it('answers HEAD with the image headers and records nothing', async () => {
    const fixture = await insertSentEmail(stack, project.id);
    const res = await fetch(stack.api.url + linksFor(fixture).pixel, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/gif');
    expect(await emailRow(stack, fixture.emailId)).toMatchObject({ status: 'SENT', opens: 0 });
  });

  it('is never rate limited and takes no key', async () => {
    const fixture = await insertSentEmail(stack, project.id);
    const { pixel } = linksFor(fixture);
    // RATE_LIMIT_PER_MINUTE is 5 in this file.
    const results = await Promise.all(Array.from({ length: 8 }, () => fetchPixel(pixel)));
    for (const res of results) expectPixel(res);
    expect(await emailRow(stack, fixture.emailId)).toMatchObject({ opens: 8 });
    expect(names(await eventsOf(stack, { emailId: fixture.emailId }))).toEqual(['email.opened']);
  });
});

describe('click redirect', () => {
  it('redirects to the signed URL, marks the email CLICKED and records the first click with its URL', async () => {
    const fixture = await insertSentEmail(stack, project.id, { subject: 'Sale' });
    const { pixel, click } = linksFor(fixture);
    await fetchPixel(pixel);
    const target = 'https://shop.example.com/sale?utm_source=mail&x=a b&y=ü#top';
    const res = await stack.http.get(click(target));
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).toString()).toBe(new URL(target).toString());

    const second = 'https://shop.example.com/other';
    expect((await stack.http.get(click(second))).status).toBe(302);
    expect((await stack.http.get(click(target))).status).toBe(302);

    const row = await emailRow(stack, fixture.emailId);
    expect(row).toMatchObject({ status: 'CLICKED', clicks: 3, opens: 1 });
    expect(row.clicked_at).not.toBeNull();
    const events = await eventsOf(stack, { emailId: fixture.emailId });
    expect(names(events)).toEqual(['email.opened', 'email.clicked']);
    expect(events[1].data).toEqual({ emailId: fixture.emailId, subject: 'Sale', templateId: null, campaignId: null, url: target });

    // A later open does not move a clicked email back.
    await fetchPixel(pixel);
    expect(await emailRow(stack, fixture.emailId)).toMatchObject({ status: 'CLICKED', opens: 2 });
  });

  it('counts a click without a seen open as the first open too (images blocked)', async () => {
    const fixture = await insertSentEmail(stack, project.id);
    const { click } = linksFor(fixture);
    expect((await stack.http.get(click('https://example.com/a'))).status).toBe(302);
    const row = await emailRow(stack, fixture.emailId);
    expect(row).toMatchObject({ status: 'CLICKED', opens: 1, clicks: 1 });
    expect(row.opened_at).not.toBeNull();
    expect(names(await eventsOf(stack, { emailId: fixture.emailId }))).toEqual(['email.opened', 'email.clicked']);
    // The pixel loading later adds to the count but records no second email.opened.
    await fetchPixel(linksFor(fixture).pixel);
    expect(await emailRow(stack, fixture.emailId)).toMatchObject({ status: 'CLICKED', opens: 2 });
    expect(names(await eventsOf(stack, { emailId: fixture.emailId }))).toEqual(['email.opened', 'email.clicked']);
  });

  it('refuses a forged signature, a changed URL or another email id with a 400 page and no Location', async () => {
    const fixture = await insertSentEmail(stack, project.id);
    const other = await insertSentEmail(stack, project.id);
    const { click } = linksFor(fixture);
    const good = click('https://example.com/landing');
    const sig = new URL('http://x' + good).searchParams.get('sig')!;
    const attempts = [
      // Open-redirect attempt: a valid signature, another target.
      `/t/c/${fixture.emailId}?url=${encodeURIComponent('https://evil.example.net/')}&sig=${sig}`,
      `/t/c/${fixture.emailId}?url=${encodeURIComponent('https://example.com/landing')}&sig=${sig.startsWith('A') ? 'B' : 'A'}${sig.slice(1)}`,
      `/t/c/${other.emailId}?url=${encodeURIComponent('https://example.com/landing')}&sig=${sig}`,
      `/t/c/${fixture.emailId}?url=${encodeURIComponent('https://example.com/landing')}`,
      `/t/c/${fixture.emailId}?sig=${sig}`,
      `/t/c/${fixture.emailId}?url=a&url=b&sig=${sig}`,
      `/t/c/not-a-uuid?url=${encodeURIComponent('https://example.com/landing')}&sig=${sig}`,
    ];
    for (const path of attempts) {
      const res = await stack.http.get(path);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.text).toContain('Link not valid');
      expect(res.text).not.toContain('evil.example.net');
    }
    for (const id of [fixture.emailId, other.emailId]) {
      expect(await emailRow(stack, id)).toMatchObject({ status: 'SENT', clicks: 0, opens: 0 });
      expect(await eventsOf(stack, { emailId: id })).toEqual([]);
    }
  });

  it('still redirects when the email no longer exists (its contact was deleted)', async () => {
    const fixture = await insertSentEmail(stack, project.id);
    const { click } = linksFor(fixture);
    expect((await stack.http.delete(`/contacts/${fixture.contactId}`, { key: project.secretKey })).status).toBe(204);
    const res = await stack.http.get(click('https://example.com/after'));
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://example.com/after');
  });

  it('does not move a bounced email, but counts its clicks', async () => {
    const fixture = await insertSentEmail(stack, project.id, { status: 'BOUNCED' });
    expect((await stack.http.get(linksFor(fixture).click('https://example.com/'))).status).toBe(302);
    expect(await emailRow(stack, fixture.emailId)).toMatchObject({ status: 'BOUNCED', clicks: 1 });
  });
});
