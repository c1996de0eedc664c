import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { eventually } from '../support/eventually';
import { listRuns, projectDeliveriesClosed } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { MAX_RECIPIENTS_PER_SEND } from '../../api/schemas/sendSchemas';

/**
 * A delivery round larger than one delivery workflow's EmailIds search attribute can name (53 or
 * more UUIDs pass Temporal's 2 KB): every email is still scheduled, delivered, and found by its id.
 */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

describe('a /v1/send round of more emails than one delivery workflow can name', () => {
  it(`one send to ${MAX_RECIPIENTS_PER_SEND} recipients: accepted, every email delivered once, and each found by EmailIds = "<id>" in its own workflow`, async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const recipients = Array.from({ length: MAX_RECIPIENTS_PER_SEND }, (_, i) => `many-${i}@example.org`);
    const res = await stack.http.post('/v1/send', { to: recipients, from: `hello@${domain}`, subject: 'Hello', body: '<p>Hi</p>' }, { key: project.secretKey });
    expect(res.body.error ?? null).toBeNull();
    expect(res.status).toBe(200);
    const emailIds: string[] = res.body.data.emails.map((e: { email: string }) => e.email);
    expect(emailIds).toHaveLength(MAX_RECIPIENTS_PER_SEND);

    await eventually(async () => {
      const [row] = await stack.orm.em.fork().execute(`select count(*)::int as n from emails where project_id = ? and status = 'SENT'`, [project.id]);
      if (row.n !== MAX_RECIPIENTS_PER_SEND) throw new Error(`${row.n} SENT`);
    }, 60_000);
    await projectDeliveriesClosed(stack, project.id);
    expect(recipients.filter((to) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length !== 1)).toEqual([]);

    const rows = await stack.orm.em
      .fork()
      .execute<Array<{ id: string; delivery_workflow_id: string }>>(`select id, delivery_workflow_id from emails where project_id = ?`, [project.id]);
    const workflowOf = new Map(rows.map((r) => [r.id, r.delivery_workflow_id]));
    // Cut into workflows of at most 50 (temporal/deliveryChunks.ts): two here.
    expect(new Set(workflowOf.values()).size).toBe(2);
    // Visibility lags behind the starts: each email's query is retried until its run shows.
    for (const id of emailIds) {
      const runs = await eventually(async () => {
        const found = await listRuns(stack.temporal, `EmailIds = "${id}"`);
        if (!found.length) throw new Error(`no run found for EmailIds = "${id}"`);
        return found;
      }, 30_000);
      expect(runs.map((r) => r.workflowId)).toEqual([workflowOf.get(id)]);
    }
  });
});
