import { buildMessage } from '../../mail/mime/messageBuilder';
import { startTestStack, type TestStack } from '../support/testStack';
import { createLogger } from '../../lib/logger';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { accountWithProject } from '../support/accounts';
import { createSmtpTransport, MailDeliveryError } from '../../mail/mailTransport';

describe('SMTP transport', () => {
  let smtp: TestSmtpServer;
  beforeAll(async () => {
    smtp = await startSmtpServer({ rejectRecipients: ['bounce@example.com'] });
  });
  afterAll(() => smtp.close());

  const logger = createLogger({ level: 'silent', name: 'test' });

  it('delivers through a real SMTP server with the Message-ID we chose', async () => {
    const transport = createSmtpTransport(smtp.url, logger);
    try {
      const sent = await transport.send({
        projectId: null,
        from: 'Sender <sender@example.com>',
        to: ['rcpt@example.com'],
        subject: 'Grüße ✉',
        html: '<p>Hello <b>there</b></p>',
        text: 'Hello there',
        headers: { 'X-Campaign': 'c-1' },
        messageId: '<fixed-id@mailroom.test>',
      });
      expect(sent.accepted).toEqual(['rcpt@example.com']);
      const mail = await smtp.waitFor((m) => m.parsed.messageId === '<fixed-id@mailroom.test>');
      expect(mail.parsed.subject).toBe('Grüße ✉');
      expect(mail.parsed.headers.get('x-campaign')).toBe('c-1');
      expect(mail.parsed.html).toContain('<b>there</b>');
    } finally {
      await transport.close();
    }
  });

  it('reports a 5xx refusal as a permanent delivery error', async () => {
    const transport = createSmtpTransport(smtp.url, logger);
    try {
      const failure = await transport
        .send({ projectId: null, from: 'a@example.com', to: ['bounce@example.com'], subject: 's', text: 't', messageId: '<b@x>' })
        .catch((e) => e);
      expect(failure).toBeInstanceOf(MailDeliveryError);
      expect(failure.permanent).toBe(true);
      expect(failure.responseCode).toBe(550);
    } finally {
      await transport.close();
    }
  });

  it('reports an unreachable server as a temporary delivery error', async () => {
    const transport = createSmtpTransport('smtp://127.0.0.1:1', logger);
    const failure = await transport
      .send({ projectId: null, from: 'a@example.com', to: ['x@example.com'], subject: 's', text: 't', messageId: '<c@x>' })
      .catch((e) => e);
    expect(failure).toBeInstanceOf(MailDeliveryError);
    expect(failure.permanent).toBe(false);
    await transport.close();
  });
});

describe('local outbox', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.stop());

  it("captures a project's mail and serves it at /outbox, /outbox/:id/raw and /outbox.html", async () => {
    const { project } = await accountWithProject(stack.http);
    const other = await accountWithProject(stack.http);
    expect(stack.mail.kind).toBe('outbox');
    for (let i = 1; i <= 3; i++) {
      await stack.mail.send({
        projectId: project.id,
        from: 'news@example.com',
        to: [`reader${i}@example.com`],
        subject: `Issue #${i} <script>`,
        html: `<p>Issue ${i}</p>`,
        text: `Issue ${i}`,
        messageId: `<issue-${i}@mailroom.test>`,
      });
    }

    const first = await stack.http.get('/outbox?limit=2', { key: project.secretKey });
    expect(first.status).toBe(200);
    expect(first.body.data.map((m: { subject: string }) => m.subject)).toEqual(['Issue #3 <script>', 'Issue #2 <script>']);
    expect(first.body.hasMore).toBe(true);
    const second = await stack.http.get(`/outbox?limit=2&cursor=${first.body.cursor}`, { key: project.secretKey });
    expect(second.body.data.map((m: { subject: string }) => m.subject)).toEqual(['Issue #1 <script>']);
    expect(second.body.hasMore).toBe(false);

    const raw = await stack.http.get(`/outbox/${first.body.data[0].id}/raw`, { key: project.secretKey });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toContain('message/rfc822');
    expect(raw.text).toContain('Message-ID: <issue-3@mailroom.test>');
    expect(raw.text).toContain('\r\n');

    const page = await stack.http.get('/outbox.html', { key: project.secretKey });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Issue #3 &lt;script&gt;');
    expect(page.text).not.toContain('<script>');

    // Another project sees none of it.
    expect((await stack.http.get('/outbox', { key: other.project.secretKey })).body.data).toEqual([]);
    expect((await stack.http.get(`/outbox/${first.body.data[0].id}/raw`, { key: other.project.secretKey })).status).toBe(404);
  });

  it('answers the stamp of the captured bytes: the mail and the stamp build them again', async () => {
    const { project } = await accountWithProject(stack.http);
    const mail = {
      projectId: project.id,
      from: 'news@example.com',
      to: ['stamp@example.com'],
      subject: 'Stamped',
      html: '<p>Stamped</p>',
      text: 'Stamped',
      messageId: '<stamped@mailroom.test>',
      attachments: [{ filename: 'a.txt', content: Buffer.from('attached') }],
    };
    const sent = await stack.mail.send(mail);
    const [row] = await stack.orm.em.fork().execute(`select raw from outbox_messages where id = ?`, [sent.outboxId]);
    expect(buildMessage(mail, { stamp: sent.stamp }).raw.equals(row.raw)).toBe(true);
  });

  it('answers a bad cursor 400 and a bad id 404', async () => {
    const { project } = await accountWithProject(stack.http);
    expect((await stack.http.get('/outbox?cursor=%%%', { key: project.secretKey })).status).toBe(400);
    expect((await stack.http.get('/outbox/nope/raw', { key: project.secretKey })).status).toBe(404);
  });
});
