import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { eventually } from '../support/eventually';
import { workflowsClosed } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { smtpDialog } from '../support/smtpDialog';

/**
 * The relay while its dependencies are away (contract 20): with Temporal away, `250` once the
 * message is committed (contract 9), and the mail goes out once Temporal is back, once; with
 * PostgreSQL away, `451 4.3.0` (the client keeps the message and tries again), never a 5xx, a hang
 * or a crash. The API reaches Temporal and PostgreSQL through proxies the tests cut; the stack's
 * worker (and the delivery sweep it schedules) reaches them directly.
 */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let temporalProxy: TcpProxy;
let databaseProxy: TcpProxy;
let stack: TestStack;
let port: number;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  temporalProxy = await startTcpProxy(process.env.MAILROOM_TEST_TEMPORAL_ADDRESS!);
  const server = new URL(process.env.MAILROOM_TEST_PG_SERVER_URL!);
  databaseProxy = await startTcpProxy(`${server.hostname}:${server.port || 5432}`);
  stack = await startTestStack({
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' },
    apiEnv: { TEMPORAL_ADDRESS: temporalProxy.address },
    apiDatabaseUrl: (url) => {
      const through = new URL(url);
      through.host = databaseProxy.address;
      return through.toString();
    },
    smtpPorts: { submission: 0 },
  });
  port = stack.api.smtp.submission!.port;
  await eventually(() => stack.logs.some((l) => l.event === 'temporal.ready'), 30_000);
});

afterAll(async () => {
  temporalProxy?.setMode('pass');
  databaseProxy?.setMode('pass');
  await stack?.stop();
  await temporalProxy?.close();
  await databaseProxy?.close();
  await smtp?.close();
  await dns?.close();
});

const relay = (password: string) =>
  nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, auth: { user: 'app', pass: password } } as SMTPTransport.Options);

const emailsTo = (address: string) => stack.orm.em.fork().execute(`select id from emails where to_address = ?`, [address]);

describe('SMTP relay while Temporal or PostgreSQL is away', () => {
  it('answers 250 while Temporal is unreachable, and the message goes out once Temporal is back, once', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const message = { from: `app@${domain}`, to: 'temporal-away@example.org', subject: 's', text: 't', messageId: '<temporal-away@app.example>' };
    temporalProxy.setMode('refuse');
    let queued: string;
    try {
      queued = (await relay(project.secretKey).sendMail(message)).response;
      expect(queued).toMatch(/^250 2\.0\.0 queued as [0-9a-f-]{36}$/);
      // The delivery start gives up at its deadline, after the answer: the sweep starts it later.
      await eventually(
        () => stack.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('could not start a delivery workflow') && l.projectId === project.id),
        30_000,
      );
      // A resubmission (a client that missed the 250) is answered the same id, and records nothing more.
      expect((await relay(project.secretKey).sendMail(message)).response).toBe(queued);
    } finally {
      temporalProxy.setMode('pass');
    }
    const [row] = await stack.orm.em
      .fork()
      .execute<Array<{ id: string; delivery_workflow_id: string }>>(`select id, delivery_workflow_id from emails where to_address = ?`, [
        'temporal-away@example.org',
      ]);
    expect(queued).toBe(`250 2.0.0 queued as ${row.id}`);
    expect(await emailsTo('temporal-away@example.org')).toHaveLength(1);
    // Temporal is back (for the worker it never left): the delivery sweep starts the delivery.
    await eventually(async () => {
      const [now] = await stack.orm.em.fork().execute(`select status from emails where id = ?`, [row.id]);
      if (now.status !== 'SENT') throw new Error(now.status);
    }, 90_000);
    await workflowsClosed(stack.temporal, [row.delivery_workflow_id]);
    expect(smtp.messages.filter((m) => m.envelopeTo.includes('temporal-away@example.org'))).toHaveLength(1);
  });

  it('answers 451 4.3.0 to DATA while PostgreSQL is unreachable, and serves the same session again once it is back', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const dialog = await smtpDialog(port);
    try {
      expect((await dialog.authPlain('app', project.secretKey)).code).toBe(235);
      const submit = async () => {
        expect((await dialog.command(`MAIL FROM:<app@${domain}>`)).code).toBe(250);
        expect((await dialog.command('RCPT TO:<db-away@example.org>')).code).toBe(250);
        expect((await dialog.command('DATA')).code).toBe(354);
        return dialog.message(`From: app@${domain}\r\nTo: db-away@example.org\r\nSubject: s\r\nMessage-ID: <db-away@app.example>\r\n\r\nbody\r\n`);
      };
      databaseProxy.setMode('refuse');
      let away;
      try {
        away = await submit();
      } finally {
        databaseProxy.setMode('pass');
      }
      expect(away.code).toBe(451);
      expect(away.text).toContain('4.3.0');
      const back = await eventually(async () => {
        const reply = await submit();
        return reply.code === 250 ? reply : Promise.reject(new Error(reply.text));
      }, 60_000);
      expect(back.text).toMatch(/^250 2\.0\.0 queued as [0-9a-f-]{36}$/);
      expect(await emailsTo('db-away@example.org')).toHaveLength(1);
    } finally {
      dialog.close();
    }
  });
});
