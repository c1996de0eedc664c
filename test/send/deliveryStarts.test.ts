import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { eventually } from '../support/eventually';
import crypto from 'node:crypto';
import { deliverySweepScheduleId } from '../../worker/schedules';
import { listRuns, projectDeliveriesClosed, triggerScheduleRun, workflowsClosed } from '../support/temporalRuns';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { MAX_RECIPIENTS_PER_SEND } from '../../api/schemas/sendSchemas';
import { loadConfig } from '../../lib/config';
import { MAX_EMAILS_PER_DELIVERY } from '../../temporal/deliveryChunks';

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
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s,1s,1s' } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

/** Waits until `EmailIds = "<id>"` finds each email's run (visibility lags behind starts); the workflow id of each. */
async function carrierOf(emailIds: string[]): Promise<Map<string, string[]>> {
  const carriers = new Map<string, string[]>();
  for (const id of emailIds) {
    const runs = await eventually(async () => {
      const found = await listRuns(stack.temporal, `EmailIds = "${id}"`);
      if (!found.length) throw new Error(`no run found for EmailIds = "${id}"`);
      return found;
    }, 30_000);
    carriers.set(
      id,
      runs.map((r) => r.workflowId),
    );
  }
  return carriers;
}

async function everySent(projectId: string, count: number): Promise<void> {
  await eventually(async () => {
    const [row] = await stack.orm.em.fork().execute(`select count(*)::int as n from emails where project_id = ? and status = 'SENT'`, [projectId]);
    if (row.n !== count) throw new Error(`${row.n} of ${count} SENT`);
  }, 30_000);
}

describe('DELIVERY_BATCH_MAX', () => {
  it('defaults to, and is refused at start above, the most emails one delivery workflow can name', () => {
    const base = { SECRET: 'x'.repeat(32), DATA_DIR: stack.config.dataDir };
    expect(loadConfig(base).deliveryBatchMax).toBe(MAX_EMAILS_PER_DELIVERY);
    expect(loadConfig({ ...base, DELIVERY_BATCH_MAX: String(MAX_EMAILS_PER_DELIVERY) }).deliveryBatchMax).toBe(MAX_EMAILS_PER_DELIVERY);
    expect(() => loadConfig({ ...base, DELIVERY_BATCH_MAX: String(MAX_EMAILS_PER_DELIVERY + 1) })).toThrow(/DELIVERY_BATCH_MAX.*at most 50 emails/);
  });
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

    await everySent(project.id, MAX_RECIPIENTS_PER_SEND);
    await projectDeliveriesClosed(stack, project.id);
    expect(recipients.filter((to) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length !== 1)).toEqual([]);

    const rows = await stack.orm.em
      .fork()
      .execute<Array<{ id: string; delivery_workflow_id: string }>>(`select id, delivery_workflow_id from emails where project_id = ?`, [project.id]);
    // Cut into workflows of at most 50 (temporal/deliveryChunks.ts): two here, each email's row naming the one that carries it.
    expect(new Set(rows.map((r) => r.delivery_workflow_id)).size).toBe(2);
    const carriers = await carrierOf(emailIds);
    expect(rows.filter((r) => carriers.get(r.id)?.join() !== r.delivery_workflow_id)).toEqual([]);
  });
});

describe('recorded mail of one workflow larger than a workflow may carry (recorded when DELIVERY_BATCH_MAX went up to 500)', () => {
  it('the delivery sweep starts it in workflows of at most 50, the first under the recorded id, and delivers each email once', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const ids = Array.from({ length: 60 }, () => crypto.randomUUID());
    const recordedId = `deliver-${ids[0]}`;
    await stack.orm.em.fork().execute(
      `insert into emails (id, project_id, source, type, subject, from_address, to_address, html, text, status, message_id, delivery_workflow_id, created_at)
       select id, ?, 'TRANSACTIONAL', 'TRANSACTIONAL', 'Stranded', ?, 'stranded-' || n || '@example.org', '<p>late</p>', 'late', 'QUEUED', '<' || id || '@' || ? || '>', ?,
              now() - interval '3 minutes'
       from unnest(?::uuid[]) with ordinality as t(id, n)`,
      [project.id, `hello@${domain}`, domain, recordedId, `{${ids.join(',')}}`],
    );
    const sweep = await triggerScheduleRun<{ started: number; alreadyRunning: number }>(
      stack.temporal,
      deliverySweepScheduleId(stack.config.temporalTaskQueue),
    );
    // The schedule's own run (every 5 s) may start them a moment before the triggered one: the
    // carriers below say who started what; the triggered run started both or found them started.
    expect(sweep.result.started + sweep.result.alreadyRunning).toBeLessThanOrEqual(2);
    await everySent(project.id, 60);
    const carriers = await carrierOf(ids);
    const sizes = new Map<string, number>();
    for (const [, [workflowId]] of carriers) sizes.set(workflowId, (sizes.get(workflowId) ?? 0) + 1);
    expect([...sizes.values()].sort((a, b) => a - b)).toEqual([10, 50]);
    expect(sizes.has(recordedId)).toBe(true);
    for (const workflowId of sizes.keys()) {
      const [first] = (await stack.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      expect(first.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).toMatch(/-delivery-sweep-run/);
    }
    await workflowsClosed(stack.temporal, sizes.keys());
    expect(ids.map((_, i) => `stranded-${i + 1}@example.org`).filter((to) => smtp.messages.filter((m) => m.envelopeTo.includes(to)).length !== 1)).toEqual([]);
  });
});
