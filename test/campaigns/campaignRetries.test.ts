import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import { listRuns, runsClosed } from '../support/temporalRuns';

/**
 * A campaign whose mail the relay refuses for a while: the temporary failures go to delivery
 * workflows of their own, at most 50 emails each so each names all of its emails in EmailIds,
 * and every email is delivered once the relay takes mail again.
 */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: Array(30).fill('1s').join(',') },
  });
});

afterAll(async () => {
  smtp?.refuseAll(false);
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

describe("a campaign's temporary failures", () => {
  it('120 emails refused for a while: retried by three delivery workflows (50, 50, 20), each email found by its id, all delivered once', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const recipients = Array.from({ length: 120 }, (_, i) => `later-${i}@example.org`);
    await sql(
      `insert into contacts (project_id, email, subscribed, data) select ?, r.email, true, '{}'::jsonb from jsonb_to_recordset(?::jsonb) as r(email text)`,
      [project.id, JSON.stringify(recipients.map((email) => ({ email })))],
    );
    const created = await stack.http.post(
      '/campaigns',
      { name: 'Later', subject: 'Later', body: '<p>Hello</p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    expect(created.status).toBe(201);
    const campaignId = created.body.data.id;

    smtp.refuseAll(true);
    try {
      expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey })).status).toBeLessThan(300);
      // The campaign's one batch of 120 fails temporarily and hands its emails to retry workflows.
      const retries = await eventually(async () => {
        const runs = await listRuns(stack.temporal, `CampaignId = "${campaignId}" AND WorkflowType = "emailDeliveryWorkflow"`);
        if (runs.length < 3) throw new Error(`${runs.length} retry workflows visible`);
        return runs;
      }, 30_000);
      expect(retries).toHaveLength(3);
    } finally {
      smtp.refuseAll(false);
    }

    await eventually(async () => {
      const [row] = await sql(`select count(*) filter (where status = 'SENT')::int as sent, count(*)::int as total from emails where campaign_id = ?`, [
        campaignId,
      ]);
      if (row.sent !== 120) throw new Error(`${row.sent}/${row.total} SENT`);
    }, 30_000);
    // The campaign's run and its three retry workflows have closed: nothing more is sent.
    await runsClosed(stack.temporal, `CampaignId = "${campaignId}"`, { atLeast: 4 });
    expect(recipients.filter((to) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length !== 1)).toEqual([]);

    const emails = await sql(`select id from emails where campaign_id = ?`, [campaignId]);
    const carriers = new Map<string, number>();
    for (const { id } of emails) {
      const runs = await eventually(async () => {
        const found = await listRuns(stack.temporal, `EmailIds = "${id}"`);
        if (!found.length) throw new Error(`no run found for EmailIds = "${id}"`);
        return found;
      }, 30_000);
      expect(runs).toHaveLength(1);
      carriers.set(runs[0].workflowId, (carriers.get(runs[0].workflowId) ?? 0) + 1);
    }
    expect([...carriers.values()].sort((a, b) => a - b)).toEqual([20, 50, 50]);
  });
});
