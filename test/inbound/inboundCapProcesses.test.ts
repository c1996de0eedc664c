import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { spawnApi, type ChildService } from '../support/processes';
import { HttpClient } from '../support/http';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { setBillingLimits } from '../support/accounts';
import { findFreePort } from '../../lib/freePort';
import { createOrm } from '../../db/orm';
import { InboundRecipients } from '../../services/inbound/inboundRecipients';
import { CapUsageLookup } from '../../services/billing/capUsageLookup';
import { SmtpDialog, type SmtpAnswer } from './smtpDialog';

/**
 * The `inbound` cap at RCPT (contract 20: `452 4.2.2`) with two API processes on one database:
 * once the API reports a project's cap reached, RCPT refuses it on either process, whichever one
 * took the message that reached it. Processing runs on the stack's worker (the processes share
 * its task queue).
 */
let dns: TestDnsServer;
let stack: TestStack;
const apis: Array<ChildService & { url: string; smtpPort: number }> = [];

beforeAll(async () => {
  dns = await startTestDnsServer();
  const env = { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' };
  stack = await startTestStack({ env });
  for (let i = 0; i < 2; i++) {
    const smtpPort = await findFreePort();
    const api = await spawnApi({
      ...env,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.config.temporalAddress!,
      TEMPORAL_NAMESPACE: stack.config.temporalNamespace,
      TEMPORAL_TASK_QUEUE: stack.config.temporalTaskQueue,
      DATA_DIR: stack.config.dataDir,
      SECRET: stack.config.secret,
      PUBLIC_URL: 'http://mailroom.test',
      LOG_LEVEL: 'info',
      PORT: '0',
      INBOUND_SMTP_PORT: String(smtpPort),
      SUBMISSION_SMTP_PORT: '0',
    });
    apis.push(Object.assign(api, { smtpPort }));
    await api.waitForLine((l) => l.msg === 'smtp inbound listening');
  }
}, 180_000);

afterAll(async () => {
  for (const api of apis) {
    api.kill();
    await api.exited;
  }
  await stack?.stop();
  await dns?.close();
});

/** An open inbound session on one process, asking RCPT once per transaction. */
async function session(port: number) {
  const { dialog } = await SmtpDialog.open(port);
  expect((await dialog.say('EHLO client.test')).code).toBe(250);
  return {
    dialog,
    async rcpt(address: string): Promise<SmtpAnswer> {
      expect((await dialog.say('RSET')).code).toBe(250);
      expect((await dialog.say('MAIL FROM:<a@sender.test>')).code).toBe(250);
      return dialog.say(`RCPT TO:<${address}>`);
    },
  };
}

describe('the inbound cap at RCPT across two API processes', () => {
  it('refuses a project on both processes as soon as the limits endpoint reports its cap reached', async () => {
    const [a, b] = apis.map((api) => new HttpClient(api.url));
    const { account, project, domain } = await projectWithVerifiedDomain({ http: a }, dns);
    await setBillingLimits(b, account, project, { inbound: 1 });
    const sessions = await Promise.all(apis.map((api) => session(api.smtpPort)));
    try {
      // Both processes have just read the project's count (0): the first message is let in on both.
      for (const s of sessions) expect((await s.rcpt(`first@${domain}`)).code).toBe(250);
      // The first message, taken by process A.
      const { dialog } = sessions[0];
      expect((await dialog.say('RSET')).code).toBe(250);
      expect((await dialog.say('MAIL FROM:<a@sender.test>')).code).toBe(250);
      expect((await dialog.say(`RCPT TO:<first@${domain}>`)).code).toBe(250);
      expect((await dialog.data('Subject: One\r\n\r\n1')).final!.code).toBe(250);

      // Until the limits endpoint says the message is counted, RCPT keeps being asked on both
      // processes, so one that remembered a count would hold one read just before the count
      // changed; the moment the endpoint says usage 1, RCPT must refuse on both.
      const limitsOf = (i: number) => (i % 2 ? a : b).get(`/users/@me/projects/${project.id}/billing-limits`, { cookie: account.cookie });
      const deadline = Date.now() + 60_000;
      let limits = await limitsOf(0);
      for (let i = 1; limits.status === 200 && limits.body.inbound.usage < 1; i++) {
        if (Date.now() > deadline) throw new Error('the first message was not counted within 60 s');
        for (const s of sessions) await s.rcpt(`first@${domain}`);
        limits = await limitsOf(i);
      }
      expect(limits.status).toBe(200);
      expect(limits.body.inbound).toMatchObject({ limit: 1, usage: 1, isBlocked: true });
      const answers = [];
      for (const s of sessions) answers.push(await s.rcpt(`second@${domain}`));
      expect(answers.map((answer) => answer.code)).toEqual([452, 452]);
      for (const answer of answers) expect(answer.text).toMatch(/^4\.2\.2 /);
    } finally {
      for (const s of sessions) s.dialog.close();
    }
    // Nothing more was counted.
    const after = await b.get(`/users/@me/projects/${project.id}/billing-limits`, { cookie: account.cookie });
    expect(after.body.inbound).toMatchObject({ limit: 1, usage: 1 });
  });

  it('reads the count of a project with a cap at every RCPT, and of a project without one at most once a second', async () => {
    const http = new HttpClient(apis[0].url);
    const open = await projectWithVerifiedDomain({ http }, dns);
    const capped = await projectWithVerifiedDomain({ http }, dns);
    await setBillingLimits(http, capped.account, capped.project, { inbound: 1000 });
    // What one API process's RCPT costs, counted on an ORM of its own: the statements that read a cap.
    const orm = await createOrm(stack.databaseUrl);
    let capReads = 0;
    orm.em
      .getConnection()
      .getKnex()
      .on('query', (query: { sql: string }) => {
        if (query.sql.includes('billing_limits')) capReads++;
      });
    try {
      const recipients = new InboundRecipients(orm, stack.config.smtpListeners, new CapUsageLookup(orm));
      const rcpt = async (domain: string, n: number, atOnce: boolean) => {
        const before = capReads;
        const started = Date.now();
        const ask = (i: number) => recipients.check(`r${i}@${domain}`).then((verdict) => expect(verdict.accepted).toBe(true));
        if (atOnce) await Promise.all(Array.from({ length: n }, (_, i) => ask(i)));
        else for (let i = 0; i < n; i++) await ask(i);
        return { reads: capReads - before, seconds: Math.floor((Date.now() - started) / 1000) };
      };

      // Without a cap: "no cap" is remembered for a second, so RCPT costs no read (one a second).
      const sequential = await rcpt(open.domain, 20, false);
      expect(sequential.reads).toBeGreaterThanOrEqual(1);
      expect(sequential.reads).toBeLessThanOrEqual(1 + sequential.seconds);
      // With a cap: every RCPT reads the count after it asked ...
      expect((await rcpt(capped.domain, 20, false)).reads).toBe(20);
      // ... and RCPTs asking at once share a read: the one in flight, then one for all that came meanwhile.
      expect((await rcpt(capped.domain, 20, true)).reads).toBeLessThanOrEqual(2);
    } finally {
      await orm.close();
    }
  });
});
