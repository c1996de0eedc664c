import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestStack, type TestStack, startStackWorker } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import type { ChildService } from '../support/processes';
import { eventually } from '../support/eventually';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import type { TestProject } from '../support/accounts';
import { startTemporalDevServer, type TemporalDevServer } from '../../launcher/temporalDevServer';
import { findFreePort } from '../../lib/freePort';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalBinary } = require('../../scripts/temporal-binary.cjs');

/**
 * A 5,000-recipient campaign survives a worker killed with SIGKILL mid-send, and a restart of
 * the Temporal server itself (its own dev server here, on a file, so the restart keeps its
 * state). Every subscribed recipient gets the campaign; duplicates can only come from the
 * hand-overs in flight at the kill (the SMTP server stores a message before it answers), and the
 * campaign ends SENT.
 */
const WORKER_START_MS = 120_000;
const RECIPIENTS = 5000;
jest.setTimeout(300_000);

let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
let temporal: TemporalDevServer;
let temporalPort: number;
let temporalDir: string;
const workers: ChildService[] = [];

const startTemporal = () =>
  startTemporalDevServer({
    binaryPath: ensureTemporalBinary(),
    port: temporalPort,
    uiPort: false,
    namespace: 'default',
    dbFilename: path.join(temporalDir, 'temporal.db'),
  });

beforeAll(async () => {
  temporalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-temporal-'));
  temporalPort = await findFreePort();
  temporal = await startTemporal();
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ worker: false, env: { TEMPORAL_ADDRESS: temporal.address, DNS_SERVERS: dns.address, SMTP_URL: smtp.url } });
}, 120_000);

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await stack?.stop();
  await temporal?.stop();
  await smtp?.close();
  await dns?.close();
  fs.rmSync(temporalDir, { recursive: true, force: true });
});

async function startWorker(): Promise<ChildService> {
  const worker = await startStackWorker(
    stack,
    {
      TEMPORAL_ADDRESS: temporal.address,
      SMTP_URL: smtp.url,
      // Continue as new every few batches: the send must cross many runs without losing its place.
      CAMPAIGN_HISTORY_EVENTS: '60',
    },
    WORKER_START_MS,
  );
  workers.push(worker);
  return worker;
}

async function killed(worker: ChildService) {
  worker.kill('SIGKILL');
  await worker.exited;
}

async function campaignTo(prefix: string): Promise<{ project: TestProject; campaignId: string; recipients: string[] }> {
  const { project, domain } = await projectWithVerifiedDomain(stack, dns);
  const recipients = Array.from({ length: RECIPIENTS }, (_, i) => `${prefix}-${i}@example.org`);
  await stack.orm.em
    .fork()
    .execute(`insert into contacts (project_id, email, subscribed) select ?, e, true from jsonb_array_elements_text(?::jsonb) as e`, [
      project.id,
      JSON.stringify(recipients),
    ]);
  // Unsubscribed contacts are outside a MARKETING audience.
  await stack.orm.em
    .fork()
    .execute(`insert into contacts (project_id, email, subscribed) values (?, ?, false)`, [project.id, `${prefix}-unsubscribed@example.org`]);
  const created = await stack.http.post(
    '/campaigns',
    { name: prefix, subject: 'Hello {{email}}', body: '<p>Hi</p>', from: `news@${domain}`, audienceType: 'ALL' },
    { key: project.secretKey },
  );
  expect(created.status).toBe(201);
  return { project, campaignId: created.body.data.id, recipients };
}

function deliveries(prefix: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of smtp.messages) if (m.envelopeTo[0].startsWith(`${prefix}-`)) counts.set(m.envelopeTo[0], (counts.get(m.envelopeTo[0]) ?? 0) + 1);
  return counts;
}

async function untilSent(project: TestProject, campaignId: string) {
  return eventually(
    async () => {
      const c = (await stack.http.get(`/campaigns/${campaignId}`, { key: project.secretKey })).body;
      if (c.status !== 'SENT') throw new Error(`status ${c.status}, sent ${c.sentCount}`);
      return c;
    },
    240_000,
    500,
  );
}

function report(label: string, prefix: string, recipients: string[]) {
  const counts = deliveries(prefix);
  const missing = recipients.filter((r) => !counts.has(r)).length;
  const duplicates = [...counts.values()].filter((n) => n > 1).length;
  // eslint-disable-next-line no-console -- the counts, for the person reading the run
  console.log(`${label}: ${recipients.length} recipients, ${missing} missing, ${duplicates} received twice`);
  return { missing, duplicates, unsubscribed: counts.get(`${prefix}-unsubscribed@example.org`) ?? 0 };
}

/** Sends the campaign through a slowed sink with a worker of its own, and SIGKILLs that worker once `after` mails arrived. */
async function sendAndKillWorkerAfter(project: TestProject, campaignId: string, prefix: string, after: number) {
  smtp.slowDown(2);
  const first = await startWorker();
  try {
    expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey })).status).toBe(200);
    await eventually(
      () => {
        if (deliveries(prefix).size < after) throw new Error(`${deliveries(prefix).size} delivered`);
      },
      120_000,
      20,
    );
    await killed(first);
  } finally {
    smtp.slowDown(0);
  }
}

describe('a 5,000-recipient campaign', () => {
  it('survives its worker killed mid-send', async () => {
    const { project, campaignId, recipients } = await campaignTo('killed');
    await sendAndKillWorkerAfter(project, campaignId, 'killed', 1000);
    expect(deliveries('killed').size).toBeLessThan(RECIPIENTS);
    const second = await startWorker();
    const campaign = await untilSent(project, campaignId);
    expect(campaign).toMatchObject({ totalRecipients: RECIPIENTS, sentCount: RECIPIENTS });
    const runs: string[] = [];
    for await (const run of stack.temporal.workflow.list({ query: `WorkflowId = "campaign-${campaignId}"` })) runs.push(run.runId);
    expect(runs.length).toBeGreaterThan(1);
    const { missing, duplicates, unsubscribed } = report('worker killed', 'killed', recipients);
    expect(missing).toBe(0);
    expect(unsubscribed).toBe(0);
    // A batch delivers 25 emails at a time, recorded before its next 25, and four batches run side
    // by side: only the waves in flight at the kill (at most 4 × 25) can repeat.
    expect(duplicates).toBeLessThanOrEqual(100);
    await killed(second);
  });

  it('cancelled while its worker is dead: what was handed over keeps its row, what was not is withdrawn', async () => {
    const { project, campaignId, recipients } = await campaignTo('abandoned');
    await sendAndKillWorkerAfter(project, campaignId, 'abandoned', 1000);
    // The batches that were running had recorded their emails claimed; nothing will run them again.
    expect((await stack.http.post(`/campaigns/${campaignId}/cancel`, {}, { key: project.secretKey })).status).toBe(200);
    const second = await startWorker();
    expect(await stack.temporal.workflow.getHandle(`campaign-${campaignId}`).result()).toMatchObject({ phase: 'CANCELLED' });
    const rows = await stack.orm.em
      .fork()
      .execute<Array<{ to_address: string; status: string }>>(`select to_address, status from emails where campaign_id = ?`, [campaignId]);
    const delivered = deliveries('abandoned');
    expect(delivered.size).toBeLessThan(recipients.length);
    // Every recipient who got the mail keeps its email: SENT, or SENDING for the waves in flight at the kill.
    const recorded = new Set(rows.map((r) => r.to_address));
    expect([...delivered.keys()].filter((address) => !recorded.has(address))).toEqual([]);
    // Nothing else stays behind: no email QUEUED, and SENDING only the waves the dead batches may
    // have had in flight (four batches side by side, 25 a wave), not the rest of their claims.
    expect(rows.filter((r) => r.status !== 'SENT' && r.status !== 'SENDING')).toEqual([]);
    const sending = rows.filter((r) => r.status === 'SENDING').length;
    expect(sending).toBeLessThanOrEqual(100);
    expect(rows.length).toBeLessThanOrEqual(delivered.size + 100);
    const [usage] = await stack.orm.em
      .fork()
      .execute(`select coalesce(sum(used), 0)::int as used from billing_usage where project_id = ? and category = 'campaigns'`, [project.id]);
    expect(usage.used).toBe(rows.length);
    await killed(second);
  });

  it('survives a restart of the Temporal server mid-send', async () => {
    const { project, campaignId, recipients } = await campaignTo('restarted');
    smtp.slowDown(2);
    await startWorker();
    try {
      expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey })).status).toBe(200);
      await eventually(
        () => {
          if (deliveries('restarted').size < 1000) throw new Error(`${deliveries('restarted').size} delivered`);
        },
        120_000,
        20,
      );
      await temporal.stop();
      await new Promise((r) => setTimeout(r, 2000));
      temporal = await startTemporal();
    } finally {
      smtp.slowDown(0);
    }
    const campaign = await untilSent(project, campaignId);
    expect(campaign).toMatchObject({ totalRecipients: RECIPIENTS, sentCount: RECIPIENTS });
    const { missing, duplicates } = report('Temporal restarted', 'restarted', recipients);
    expect(missing).toBe(0);
    // A batch whose heartbeats failed while the server was down may be retried while its first
    // attempt finishes its wave: at most the waves then in flight again.
    expect(duplicates).toBeLessThanOrEqual(100);
  });
});
