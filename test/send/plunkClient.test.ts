import Plunk from '@plunk/node';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';

/** The published Plunk client (@plunk/node), unchanged, pointed at Mailroom's /v1/ (contract, preamble). */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, SMTP_URL: smtp.url } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

describe('@plunk/node against Mailroom', () => {
  it('sends an email and tracks an event', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const server = new Plunk(project.secretKey, { baseUrl: `${stack.http.baseUrl}/v1/` });
    const sent: any = await server.emails.send({
      to: 'plunk-user@example.org',
      subject: 'From the Plunk client',
      body: '<p>It works</p>',
      from: `app@${domain}`,
      name: 'The App',
    });
    expect(sent).toMatchObject({ success: true, data: { emails: [{ contact: { email: 'plunk-user@example.org' }, email: expect.any(String) }] } });
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('plunk-user@example.org'));
    expect(mail.parsed.subject).toBe('From the Plunk client');
    expect(mail.parsed.from?.value).toEqual([{ name: 'The App', address: `app@${domain}` }]);

    const browser = new Plunk(project.publicKey, { baseUrl: `${stack.http.baseUrl}/v1/` });
    const tracked = await browser.events.track({
      event: 'signed-up',
      email: 'plunk-user@example.org',
      data: { plan: 'pro', coupon: { value: 'X1', persistent: false } },
    });
    expect(tracked).toMatchObject({ success: true, data: { contact: sent.data.emails[0].contact.id, event: expect.any(String) } });
    const contact = await stack.http.get(`/contacts/${sent.data.emails[0].contact.id}`, { key: project.secretKey });
    expect(contact.body.data).toEqual({ plan: 'pro' });
  });

  it("surfaces a wrong key as the client's own TokenError", async () => {
    const { project } = await projectWithVerifiedDomain(stack, dns);
    const wrong = new Plunk(project.publicKey, { baseUrl: `${stack.http.baseUrl}/v1/` });
    const error = await wrong.emails.send({ to: 'x@example.org', subject: 'S', body: 'B' }).catch((err: Error) => err);
    expect((error as Error).constructor.name).toBe('TokenError');
  });
});
