import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, createProject, signUp, type TestProject } from '../support/accounts';
import { contactSubscribed, eventsOf, insertContact } from '../support/emailFixtures';
import { emailLinks, signLinkToken } from '../../mail/links/signedLinks';
import type { RecordedEventsBatch } from '../../services/events/eventTriggers';

let stack: TestStack;
let project: TestProject;
const triggered: RecordedEventsBatch[] = [];

beforeAll(async () => {
  stack = await startTestStack({ worker: false, env: { RATE_LIMIT_PER_MINUTE: '1' } });
  const account = await signUp(stack.http);
  project = await createProject(stack.http, account, 'Acme <News> & "Co"');
  stack.eventTriggers.subscribe(async (batch) => void triggered.push(batch));
});
afterAll(() => stack?.stop());

function pagesFor(contactId: string) {
  const links = emailLinks(stack.config.publicUrl, stack.config.secret, { emailId: contactId, contactId });
  const path = (url: string) => url.slice(stack.config.publicUrl.length);
  return { unsubscribe: path(links.unsubscribeUrl), subscribe: path(links.subscribeUrl), manage: path(links.manageUrl) };
}

function expectPage(res: { status: number; headers: Headers; text: string }, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy')!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("form-action 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(res.headers.get('cache-control')).toBe('no-store');
  // Nothing external: no scripts, no links or images to other hosts.
  expect(res.text).not.toMatch(/<script|<img|<link|https?:\/\//i);
}

/** What a mail client sends for RFC 8058 one-click unsubscribe. */
const oneClick = (path: string) =>
  stack.http.request('POST', path, { rawBody: 'List-Unsubscribe=One-Click', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });

const names = (events: Array<Record<string, any>>) => events.map((e) => e.name);

describe('unsubscribe page', () => {
  it('GET only shows a confirmation form; POST unsubscribes, records contact.unsubscribed and answers a page', async () => {
    const { contactId, email } = await insertContact(stack, project.id, { email: 'reader+<b>@example.com' });
    const { unsubscribe, subscribe } = pagesFor(contactId);

    const shown = await stack.http.get(unsubscribe);
    expectPage(shown, 200);
    expect(shown.text).toContain(`<form method="post" action="${unsubscribe}">`);
    expect(shown.text).toContain('reader+&lt;b&gt;@example.com');
    expect(shown.text).toContain('Acme &lt;News&gt; &amp; &quot;Co&quot;');
    expect(shown.text).not.toContain('<b>');
    // A GET (a link scanner) changes nothing.
    expect(await contactSubscribed(stack, contactId)).toBe(true);

    const done = await stack.http.request('POST', unsubscribe);
    expectPage(done, 200);
    expect(done.text).toContain('You are unsubscribed');
    expect(done.text).toContain(`action="${subscribe}"`);
    expect(await contactSubscribed(stack, contactId)).toBe(false);
    const events = await eventsOf(stack, { contactId });
    expect(events).toEqual([{ name: 'contact.unsubscribed', source: 'SYSTEM', email_id: null, contact_id: contactId, data: { source: 'page' } }]);
    expect(
      triggered
        .flatMap((b) => b.events)
        .filter((e) => e.contactId === contactId)
        .map((e) => e.name),
    ).toEqual(['contact.unsubscribed']);

    // Again: still 200, no second event.
    expectPage(await stack.http.request('POST', unsubscribe), 200);
    expect(names(await eventsOf(stack, { contactId }))).toEqual(['contact.unsubscribed']);
    expect(email).toBe('reader+<b>@example.com');
  });

  it('accepts an RFC 8058 one-click POST (form-encoded body) and is never rate limited', async () => {
    const contacts = await Promise.all([1, 2, 3, 4].map(() => insertContact(stack, project.id)));
    // RATE_LIMIT_PER_MINUTE is 1 in this file; four one-clicks at once all succeed.
    const results = await Promise.all(contacts.map((c) => oneClick(pagesFor(c.contactId).unsubscribe)));
    for (const res of results) expectPage(res, 200);
    for (const c of contacts) expect(await contactSubscribed(stack, c.contactId)).toBe(false);
  });

  it('refuses a one-click body over the size limit with 413 and changes nothing', async () => {
    const { contactId } = await insertContact(stack, project.id);
    const res = await stack.http.request('POST', pagesFor(contactId).unsubscribe, {
      rawBody: `List-Unsubscribe=One-Click&pad=${'x'.repeat(20_000)}`,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(413);
    expect(await contactSubscribed(stack, contactId)).toBe(true);
  });
});

describe('subscribe and manage pages', () => {
  it('subscribe GET confirms, POST resubscribes with contact.subscribed', async () => {
    const { contactId } = await insertContact(stack, project.id, { subscribed: false });
    const { subscribe, unsubscribe } = pagesFor(contactId);
    const shown = await stack.http.get(subscribe);
    expectPage(shown, 200);
    expect(shown.text).toContain(`<form method="post" action="${subscribe}">`);
    expect(await contactSubscribed(stack, contactId)).toBe(false);

    const done = await stack.http.request('POST', subscribe, { rawBody: '', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expectPage(done, 200);
    expect(done.text).toContain('You are subscribed');
    expect(done.text).toContain(`action="${unsubscribe}"`);
    expect(await contactSubscribed(stack, contactId)).toBe(true);
    expect(names(await eventsOf(stack, { contactId }))).toEqual(['contact.subscribed']);
  });

  it('manage shows the current state with the button that changes it', async () => {
    const { contactId, email } = await insertContact(stack, project.id);
    const { manage, unsubscribe, subscribe } = pagesFor(contactId);
    let page = await stack.http.get(manage);
    expectPage(page, 200);
    expect(page.text).toContain(email);
    expect(page.text).toContain(`${email} receives email from`);
    expect(page.text).toContain(`action="${unsubscribe}"`);

    await stack.http.request('POST', unsubscribe);
    page = await stack.http.get(manage);
    expect(page.text).toContain('will no longer receive marketing email');
    expect(page.text).toContain(`action="${subscribe}"`);
    expect(await contactSubscribed(stack, contactId)).toBe(false);
  });
});

describe('invalid links', () => {
  it('answers a 404 page for forged, malformed, wrong-purpose tokens and deleted contacts, changing nothing', async () => {
    const { contactId } = await insertContact(stack, project.id);
    const good = pagesFor(contactId).unsubscribe.split('/').pop()!;
    const [id, mac] = good.split('.');
    const forged = `${id}.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`;
    const wrongPurpose = signLinkToken(stack.config.secret, 'open', contactId);
    for (const token of [forged, id, 'nonsense', wrongPurpose, `${id}.${mac}x`]) {
      for (const page of ['unsubscribe', 'subscribe', 'manage']) {
        const get = await stack.http.get(`/${page}/${encodeURIComponent(token)}`);
        expectPage(get, 404);
        expect(get.text).toContain('Link not found');
      }
      expectPage(await oneClick(`/unsubscribe/${encodeURIComponent(token)}`), 404);
      expectPage(await stack.http.request('POST', `/subscribe/${encodeURIComponent(token)}`), 404);
    }
    expect(await contactSubscribed(stack, contactId)).toBe(true);
    expect(await eventsOf(stack, { contactId })).toEqual([]);

    // Deleted contact: the valid token leads nowhere and nothing is re-created.
    const { project: other } = await accountWithProject(stack.http);
    const gone = await insertContact(stack, other.id);
    expect((await stack.http.delete(`/contacts/${gone.contactId}`, { key: other.secretKey })).status).toBe(204);
    const pages = pagesFor(gone.contactId);
    expectPage(await stack.http.get(pages.manage), 404);
    expectPage(await oneClick(pages.unsubscribe), 404);
    expectPage(await stack.http.request('POST', pages.subscribe), 404);
    const [{ count }] = await stack.orm.em.fork().execute(`select count(*)::int as count from contacts where project_id = ?`, [other.id]);
    expect(count).toBe(0);
  });
});
