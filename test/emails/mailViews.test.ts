import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';

/**
 * Contract 21 over real delivery into the local outbox (SMTP_URL unset): GET /emails/:id carries
 * the parts as handed over (tracking included), GET /emails/:id/preview and /outbox/:id/preview
 * answer them without tracking (looking is not opening), GET /outbox/:id the caught message's
 * parts, read with the MIME parser of received mail.
 */
let stack: TestStack;
let account: TestAccount;
let project: TestProject;
let emailId: string;
let outboxId: string;

const BODY =
  '<html><body><p>Hello. <a href="https://shop.example.org/offer?a=1&amp;b=2">See the offer</a> ' +
  '<a href="mailto:help@example.org">Write to us</a><img src="https://images.example.org/logo.png" alt="Logo"></p></body></html>';

const get = (path: string) => stack.http.get(path, { key: project.secretKey });

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  ({ account, project } = await accountWithProject(stack.http));
  const sent = await stack.http.post(
    '/v1/send',
    {
      from: `news@${OUTBOX_SENDER_DOMAIN}`,
      to: 'reader@example.org',
      subject: 'Looking is not opening',
      body: BODY,
      attachments: [{ filename: 'notes.txt', content: Buffer.from('attached words').toString('base64'), contentType: 'text/plain' }],
    },
    { key: project.secretKey },
  );
  expect(sent.status).toBe(200);
  emailId = sent.body.data.emails[0].email;
  const caught = await eventually(async () => {
    const page = await get('/outbox');
    expect(page.body.data).toHaveLength(1);
    return page.body.data[0];
  }, 60_000);
  outboxId = caught.id;
  await eventually(async () => expect((await get(`/emails/${emailId}`)).body.status).toBe('SENT'), 30_000);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

describe('GET /emails/:id (mail as it was sent)', () => {
  it('carries the HTML and text parts exactly as handed over, open pixel and click redirects included', async () => {
    const email = (await get(`/emails/${emailId}`)).body;
    expect(email.html).toContain(`${stack.config.publicUrl}/t/o/${emailId}.`);
    expect(email.html).toContain(`href="${stack.config.publicUrl}/t/c/${emailId}?url=${encodeURIComponent('https://shop.example.org/offer?a=1&b=2')}&amp;sig=`);
    expect(email.text).toContain('See the offer');
    // The caught message, read by a MIME parser, is the same HTML.
    const caught = (await get(`/outbox/${outboxId}`)).body;
    expect(caught.html.replace(/\r\n/g, '\n')).toBe(email.html.replace(/\r\n/g, '\n'));
  });
});

describe('GET /emails/:id/preview (looking is not opening)', () => {
  it('answers the HTML without the pixel and with links at their targets, the text part, the remote images; reading it records nothing', async () => {
    const res = await get(`/emails/${emailId}/preview`);
    expect(res.status).toBe(200);
    const record = (await get(`/emails/${emailId}`)).body;
    expect(res.body).toEqual({
      html: BODY,
      text: record.text,
      remoteImages: 1,
    });
    expect(res.body.html).not.toContain('/t/o/');
    expect(res.body.html).not.toContain('/t/c/');

    // Nothing was counted: a real open through the pixel afterwards is the first and only one.
    const pixel = new URL(/src="([^"]*\/t\/o\/[^"]+\.gif)"/.exec(record.html)![1]).pathname;
    expect((await stack.http.get(pixel)).status).toBe(200);
    const opened = (await get(`/emails/${emailId}`)).body;
    expect(opened).toMatchObject({ opens: 1, clicks: 0, status: 'OPENED' });
    expect(opened.events.map((e: { name: string }) => e.name)).toEqual(['email.sent', 'email.opened']);
  });

  it('answers a session with X-Project-Id (as the dashboard calls it), and 404 for an unknown, malformed or foreign id', async () => {
    const bySession = await stack.http.get(`/emails/${emailId}/preview`, { cookie: account.cookie, headers: { 'X-Project-Id': project.id } });
    expect(bySession.status).toBe(200);
    expect(bySession.body.remoteImages).toBe(1);
    const raw = await stack.http.get(`/emails/${emailId}/raw`, { cookie: account.cookie, headers: { 'X-Project-Id': project.id } });
    expect(raw.status).toBe(200);

    const other = await accountWithProject(stack.http);
    for (const [path, key] of [
      ['/emails/00000000-0000-4000-8000-000000000000/preview', project.secretKey],
      ['/emails/not-an-id/preview', project.secretKey],
      [`/emails/${emailId}/preview`, other.project.secretKey],
    ]) {
      const res = await stack.http.get(path, { key });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'EMAIL_NOT_FOUND', requestId: expect.any(String) });
    }
    expect((await stack.http.get(`/emails/${emailId}/preview`)).status).toBe(401);
    expect((await stack.http.get(`/emails/${emailId}/preview`, { key: project.publicKey })).status).toBe(401);
  });
});

describe('GET /emails/:id/preview.html (the preview as a document that may load remote images)', () => {
  it('answers the untracked HTML with a policy of its own: images from anywhere, nothing else, sandboxed, framed by this origin only', async () => {
    const res = await get(`/emails/${emailId}/preview.html`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.text).toBe(`<!doctype html><meta charset="utf-8"><base target="_blank">${BODY}`);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'none'", 'img-src * data:', "frame-ancestors 'self'", 'sandbox allow-popups allow-popups-to-escape-sandbox']) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('script-src');
    expect(csp).not.toContain('allow-scripts');
    expect(csp).not.toContain('allow-same-origin');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('private, no-store');
  });

  it('takes a session’s project from ?projectId= (a frame cannot send X-Project-Id); refuses a malformed one, another project’s, none', async () => {
    const bySession = await stack.http.get(`/emails/${emailId}/preview.html?projectId=${project.id}`, { cookie: account.cookie });
    expect(bySession.status).toBe(200);
    expect(bySession.text).toContain('See the offer');
    expect((await stack.http.get(`/emails/${emailId}/preview.html?projectId=nope`, { cookie: account.cookie })).status).toBe(400);
    const other = await accountWithProject(stack.http);
    expect((await stack.http.get(`/emails/${emailId}/preview.html?projectId=${other.project.id}`, { cookie: account.cookie })).status).toBe(401);
    expect((await stack.http.get(`/emails/${emailId}/preview.html?projectId=${project.id}`, { cookie: other.account.cookie })).status).toBe(401);
    expect((await stack.http.get(`/emails/${emailId}/preview.html`, { cookie: account.cookie })).status).toBe(401);
    // A key names its own project: the parameter changes nothing.
    expect((await stack.http.get(`/emails/${emailId}/preview.html?projectId=${other.project.id}`, { key: project.secretKey })).status).toBe(200);
  });
});

describe('GET /outbox/:id, /outbox/:id/preview, /outbox/:id/attachments/:index', () => {
  it('answers the caught message with its parts, header fields and attachments', async () => {
    const res = await get(`/outbox/${outboxId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: outboxId,
      from: `news@${OUTBOX_SENDER_DOMAIN}`,
      to: ['reader@example.org'],
      subject: 'Looking is not opening',
      text: expect.stringContaining('See the offer'),
      html: expect.stringContaining('/t/o/'),
      attachments: [{ index: 0, filename: 'notes.txt', contentType: 'text/plain', size: 14 }],
    });
    expect(res.body.headers).toEqual(expect.arrayContaining([{ name: 'Subject', value: 'Looking is not opening' }]));

    const attachment = await get(`/outbox/${outboxId}/attachments/0`);
    expect(attachment.status).toBe(200);
    expect(attachment.text).toBe('attached words');
    expect(attachment.headers.get('content-disposition')).toBe('attachment');
  });

  it('previews it without tracking, as an email', async () => {
    const preview = await get(`/outbox/${outboxId}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.body.html.replace(/\r\n/g, '\n')).toBe(BODY);
    expect(preview.body.remoteImages).toBe(1);
    expect(preview.body.text).toContain('See the offer');
  });

  it('404 for an unknown, malformed or another project’s message and a missing attachment; the session works as the key', async () => {
    const other = await accountWithProject(stack.http);
    for (const [path, key] of [
      ['/outbox/00000000-0000-4000-8000-000000000000', project.secretKey],
      ['/outbox/nope', project.secretKey],
      [`/outbox/${outboxId}`, other.project.secretKey],
      [`/outbox/${outboxId}/preview`, other.project.secretKey],
      [`/outbox/${outboxId}/attachments/1`, project.secretKey],
      [`/outbox/${outboxId}/attachments/first`, project.secretKey],
    ]) {
      const res = await stack.http.get(path, { key });
      expect([path, res.status]).toEqual([path, 404]);
    }
    const bySession = await stack.http.get(`/outbox/${outboxId}`, { cookie: account.cookie, headers: { 'X-Project-Id': project.id } });
    expect(bySession.status).toBe(200);
    expect((await stack.http.get(`/outbox/${outboxId}`)).status).toBe(401);
  });
});
