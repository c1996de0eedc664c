import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';
import { templateVariableNames } from '../../mail/rendering/templateVariableNames';

// POST /templates/preview (contract 7's renderer, contract 21's "looking is not opening") and
// POST /templates/:id/test (one copy through the send path, counted nowhere).

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
});

afterAll(async () => {
  await stack?.stop();
});

const from = `hello@${OUTBOX_SENDER_DOMAIN}`;

async function projectWithContact(): Promise<{ project: TestProject; account: TestAccount; contactId: string }> {
  const { project, account } = await accountWithProject(stack.http);
  const created = await stack.http.post(
    '/contacts',
    { email: 'ada@example.com', data: { firstName: 'Ada', plan: { name: 'Pro' } } },
    { key: project.secretKey },
  );
  expect(created.status).toBe(201);
  return { project, account, contactId: created.body.id };
}

const preview = (project: TestProject, body: unknown) => stack.http.post('/templates/preview', body, { key: project.secretKey });

describe('POST /templates/preview', () => {
  it('renders for a contact as sending would, footer included, without the open pixel or click redirects', async () => {
    const { project, contactId } = await projectWithContact();
    const res = await preview(project, {
      subject: 'Hi {{firstName}}, your {{data.plan.name}} plan',
      body: '<html><body><p>Hello {{firstName ?? "friend"}} ({{email}})</p><a href="https://example.com/docs">Docs</a></body></html>',
      contactId,
    });
    expect(res.status).toBe(200);
    expect(res.body.subject).toBe('Hi Ada, your Pro plan');
    expect(res.body.html).toContain('<p>Hello Ada (ada@example.com)</p>');
    // Links point at their targets; no pixel, no redirect.
    expect(res.body.html).toContain('href="https://example.com/docs"');
    expect(res.body.html).not.toContain('/t/o/');
    expect(res.body.html).not.toContain('/t/c/');
    // MARKETING (the default) gets the footer, as sent: the contact's real unsubscribe page.
    expect(res.body.html).toMatch(/href="http:\/\/mailroom\.test\/unsubscribe\/[0-9a-f-]{36}\.[\w-]+"/);
    expect(res.body.html.indexOf('/unsubscribe/')).toBeLessThan(res.body.html.indexOf('</body>'));
    expect(res.body.text).toContain('Hello Ada');
    expect(res.body.variables).toEqual(['data.plan.name', 'email', 'firstName']);

    // The footer's link is the contact's: its page names the contact's address.
    const unsubscribe = /href="http:\/\/mailroom\.test(\/unsubscribe\/[^"]+)"/.exec(res.body.html)![1];
    const page = await stack.http.get(unsubscribe);
    expect(page.status).toBe(200);
    expect(page.text).toContain('ada@example.com');
  });

  it('records nothing: no email, no event, the contact untouched', async () => {
    const { project, contactId } = await projectWithContact();
    const before = await stack.http.get(`/contacts/${contactId}`, { key: project.secretKey });
    for (let i = 0; i < 3; i++) expect((await preview(project, { subject: 'S', body: '<p>{{firstName}}</p>', contactId })).status).toBe(200);
    expect((await stack.http.get('/emails', { key: project.secretKey })).body.data).toEqual([]);
    const after = await stack.http.get(`/contacts/${contactId}`, { key: project.secretKey });
    expect(after.body).toEqual(before.body);
    const activity = await stack.http.get('/activity', { key: project.secretKey });
    expect(activity.status).toBe(200);
    expect(JSON.stringify(activity.body)).not.toMatch(/email\.(sent|opened|clicked)/);
  });

  it('takes data over the contact’s, renders MJML, and leaves TRANSACTIONAL mail without a footer', async () => {
    const { project, contactId } = await projectWithContact();
    const withData = await preview(project, {
      subject: '{{firstName}}',
      body: '<p>{{firstName}} {{coupon}}</p>',
      type: 'TRANSACTIONAL',
      contactId,
      data: { coupon: 'SAVE10', firstName: 'Grace' },
    });
    expect(withData.status).toBe(200);
    expect(withData.body.subject).toBe('Grace');
    expect(withData.body.html).toBe('<p>Grace SAVE10</p>');
    expect(withData.body.variables).toEqual(['coupon', 'firstName']);

    const noContact = await preview(project, { subject: 'Hello {{firstName}}', body: '<p>Hi {{firstName ?? "there"}}</p>', type: 'HEADLESS' });
    expect(noContact.status).toBe(200);
    expect(noContact.body).toMatchObject({ subject: 'Hello', html: '<p>Hi there</p>', variables: ['firstName'] });

    const mjml = await preview(project, {
      subject: 'MJML',
      body: '<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{firstName}}</mj-text></mj-column></mj-section></mj-body></mjml>',
      contactId,
    });
    expect(mjml.status).toBe(200);
    expect(mjml.body.html).toContain('Hi Ada');
    expect(mjml.body.html).toContain('<!doctype html>');
    expect(mjml.body.html).toContain('/unsubscribe/');
  });

  it('works with the dashboard’s session and X-Project-Id', async () => {
    const { project, account } = await accountWithProject(stack.http);
    const res = await stack.http.request('POST', '/templates/preview', {
      body: { subject: 'S', body: '<p>{{x}}</p>', data: { x: 1 } },
      cookie: account.cookie,
      headers: { 'X-Project-Id': project.id },
    });
    expect(res.status).toBe(200);
    expect(res.body.html).toContain('<p>1</p>');
  });

  it('refuses bad input with the 4xx envelope', async () => {
    const { project, account } = await projectWithContact();
    const missing = await preview(project, { subject: 'S' });
    expect(missing.status).toBe(422);
    expect(missing.body.error).toMatchObject({ code: 'VALIDATION_ERROR', errors: [expect.objectContaining({ field: 'body' })] });

    const broken = await preview(project, { subject: 'S', body: '<p>{{#if x}}open</p>' });
    expect(broken.status).toBe(422);
    expect(broken.body.error.errors[0]).toMatchObject({ field: 'body' });
    expect(broken.body.error.errors[0].message).toMatch(/Parse error/);

    const badContact = await preview(project, { subject: 'S', body: 'B', contactId: 'nope' });
    expect(badContact.status).toBe(422);
    expect(badContact.body.error.errors[0]).toMatchObject({ field: 'contactId' });

    const unknownContact = await preview(project, { subject: 'S', body: 'B', contactId: '00000000-0000-4000-8000-000000000000' });
    expect(unknownContact.status).toBe(404);
    expect(unknownContact.body.error.code).toBe('CONTACT_NOT_FOUND');

    // Another project's contact is as unknown.
    const other = await accountWithProject(stack.http);
    const theirs = await stack.http.post('/contacts', { email: 'grace@example.com' }, { key: other.project.secretKey });
    expect((await preview(project, { subject: 'S', body: 'B', contactId: theirs.body.id })).status).toBe(404);

    const extra = await preview(project, { subject: 'S', body: 'B', tracking: true });
    expect(extra.status).toBe(422);

    expect((await stack.http.post('/templates/preview', { subject: 'S', body: 'B' })).status).toBe(401);
    expect((await stack.http.post('/templates/preview', { subject: 'S', body: 'B' }, { key: project.publicKey })).status).toBe(401);
    expect(account.cookie).toBeTruthy();
  });
});

describe('POST /templates/:id/test', () => {
  it('records one [TEST] copy for the address, with its contact’s data, counted in no history', async () => {
    const { project, contactId } = await projectWithContact();
    const template = await stack.http.post(
      '/templates',
      { name: 'Welcome', subject: 'Welcome, {{firstName}}', body: '<p>Hello {{firstName}} {{extra}}</p>', from },
      { key: project.secretKey },
    );
    expect(template.status).toBe(201);
    const res = await stack.http.post(`/templates/${template.body.id}/test`, { email: ' Ada@Example.com ', data: { extra: 'X' } }, { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { email: expect.any(String), to: 'ada@example.com', subject: '[TEST] Welcome, Ada' },
      message: 'Test email sent to ada@example.com',
    });
    const email = await stack.http.get(`/emails/${res.body.data.email}`, { key: project.secretKey });
    expect(email.status).toBe(200);
    expect(email.body).toMatchObject({ subject: '[TEST] Welcome, Ada', to: 'ada@example.com', contactId: null, templateId: null, status: 'QUEUED' });
    expect(email.body.html).toContain('Hello Ada X');
    // No contact was made for an address that is none.
    const other = await stack.http.post(`/templates/${template.body.id}/test`, { email: 'nobody@example.com' }, { key: project.secretKey });
    expect(other.status).toBe(200);
    expect(other.body.data.subject).toBe('[TEST] Welcome,');
    expect((await stack.http.get('/contacts?search=nobody', { key: project.secretKey })).body.data).toEqual([]);
    expect(contactId).toBeTruthy();
  });

  it('refuses a bad address (422) and an unknown template (404)', async () => {
    const { project } = await accountWithProject(stack.http);
    const template = await stack.http.post('/templates', { name: 'T', subject: 'S', body: '<p>B</p>', from }, { key: project.secretKey });
    const bad = await stack.http.post(`/templates/${template.body.id}/test`, { email: 'not-an-address' }, { key: project.secretKey });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0]).toMatchObject({ field: 'email' });
    const unknown = await stack.http.post('/templates/00000000-0000-4000-8000-000000000000/test', { email: 'a@example.com' }, { key: project.secretKey });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('TEMPLATE_NOT_FOUND');
  });
});

describe('templateVariableNames', () => {
  it('lists the paths read, not helpers, item fields or block parameters', () => {
    expect(templateVariableNames('Hi {{firstName}}', '{{default nickname "you"}} {{{raw}}} {{a ?? b ?? "c"}}')).toEqual([
      'a',
      'b',
      'firstName',
      'nickname',
      'raw',
    ]);
    expect(templateVariableNames('{{#if vip}}{{perk}}{{else}}{{plain}}{{/if}}{{#unless off}}x{{/unless}}')).toEqual(['off', 'perk', 'plain', 'vip']);
    expect(templateVariableNames('{{#each items}}{{name}} {{../currency}} {{@index}}{{/each}}')).toEqual(['currency', 'items']);
    expect(templateVariableNames('{{#each items as |item|}}{{item.name}}{{/each}}{{#with address}}{{city}}{{/with}}')).toEqual([
      'address',
      'address.city',
      'items',
    ]);
    expect(templateVariableNames('{{lookup data key}} {{@root.top}} {{this}}')).toEqual(['data', 'key', 'top']);
    expect(templateVariableNames('no variables', '{{#if broken}')).toEqual([]);
  });
});
