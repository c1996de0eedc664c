/**
 * Automation executions (issue 8): 1,000 contacts tracked into a three-step workflow (SEND_EMAIL,
 * DELAY 0.1 minute, SEND_EMAIL). Target: every execution COMPLETED and all 2,000 mails received by
 * a local SMTP sink within 60 seconds of the last track call. API, worker, Temporal dev server,
 * PostgreSQL, the sink and this script share the 2-core machine.
 *
 *   node --import tsx bench/workflowExecutions.ts [contacts=1000] [trackConcurrency=50]
 *
 * Every execution is its own `execution-<id>` Temporal workflow with a durable six-second timer
 * between its two sends; each mail is rendered for its contact, recorded, DKIM-signed and handed
 * over by SMTP. Prints progress every second and the figures at the end.
 */
import crypto from 'node:crypto';
import { startBenchStack, printFigures } from './support/benchStack';
import { startSmtpSink } from './support/smtpSink';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { startTestDnsServer } from '../test/support/dnsServer';
import { createOrm } from '../db/orm';

async function main() {
  const contacts = Number(process.argv[2] ?? 1000);
  const concurrency = Number(process.argv[3] ?? 50);
  const dns = await startTestDnsServer();
  const sink = await startSmtpSink();
  const stack = await startBenchStack({ worker: true, env: { SMTP_URL: sink.url, DNS_SERVERS: dns.address, RATE_LIMIT_PER_MINUTE: '100000000' } });
  const orm = await createOrm(stack.databaseUrl);
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const key = { key: project.secretKey };
    const domain = `bench-${crypto.randomBytes(3).toString('hex')}.example.com`;
    const added = await http.post('/domains', { domain }, key);
    const dkim = added.body.records.find((r: { purpose: string }) => r.purpose === 'DKIM');
    dns.setTxt(dkim.name, [dkim.value]);
    await http.get(`/domains/${added.body.id}/verify`, key);

    const template = async (name: string, subject: string) => {
      const res = await http.post(
        '/templates',
        { name, subject, body: `<p>Hello {{firstName ?? "there"}}, ${name}. <a href="https://example.com/start">Start here</a></p>`, from: `hello@${domain}`, type: 'TRANSACTIONAL' },
        key,
      );
      if (res.status !== 201) throw new Error(`POST /templates answered ${res.status}: ${res.text}`);
      return (res.body.data ?? res.body).id as string;
    };
    const welcome = await template('Welcome', 'Welcome, {{firstName}}');
    const followUp = await template('Follow-up', 'How is it going, {{firstName}}?');

    const created = await http.post('/workflows', { name: 'Onboarding bench', eventName: 'signed_up' }, key);
    if (created.status !== 201) throw new Error(`POST /workflows answered ${created.status}: ${created.text}`);
    const workflowId = created.body.id as string;
    const trigger = created.body.steps.find((s: { type: string }) => s.type === 'TRIGGER');
    const step = async (type: string, config: Record<string, unknown>) => {
      const res = await http.post(`/workflows/${workflowId}/steps`, { type, config }, key);
      if (res.status !== 201) throw new Error(`POST steps (${type}) answered ${res.status}: ${res.text}`);
      return res.body.id as string;
    };
    const first = await step('SEND_EMAIL', { templateId: welcome });
    const delay = await step('DELAY', { amount: 0.1, unit: 'minutes' });
    const second = await step('SEND_EMAIL', { templateId: followUp });
    for (const [fromStepId, toStepId] of [[trigger.id, first], [first, delay], [delay, second]]) {
      const res = await http.post(`/workflows/${workflowId}/transitions`, { fromStepId, toStepId }, key);
      if (res.status !== 201) throw new Error(`POST transitions answered ${res.status}: ${res.text}`);
    }
    const enabled = await http.patch(`/workflows/${workflowId}`, { enabled: true }, key);
    if (enabled.status !== 200) throw new Error(`enabling answered ${enabled.status}: ${enabled.text}`);

    // Track the contacts in, `concurrency` requests at a time, as a signup form would.
    const startedAt = Date.now();
    let next = 0;
    let refused = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < contacts) {
          const n = ++next;
          const res = await http.post('/v1/track', { event: 'signed_up', email: `member${n}@bench.example`, data: { firstName: `Member ${n}` } }, { key: project.publicKey });
          if (res.status !== 200) refused++;
        }
      }),
    );
    const lastTrackAt = Date.now();
    const trackSeconds = (lastTrackAt - startedAt) / 1000;

    const timeline: string[] = [];
    let completed = 0;
    let settledAt = 0;
    for (let tick = 1; tick <= 300; tick++) {
      await new Promise((r) => setTimeout(r, 1000));
      const [row] = await orm.em.fork().execute(
        `select count(*)::int as total,
                count(*) filter (where status = 'COMPLETED')::int as completed,
                count(*) filter (where status = 'WAITING')::int as waiting,
                count(*) filter (where status in ('FAILED', 'EXITED', 'CANCELLED'))::int as ended_otherwise
         from workflow_executions where workflow_id = ?`,
        [workflowId],
      );
      completed = row.completed;
      timeline.push(
        `${String(tick).padStart(4)} s  executions ${String(row.total).padStart(5)}  waiting ${String(row.waiting).padStart(5)}  completed ${String(row.completed).padStart(5)}  other ends ${row.ended_otherwise}  mails ${String(sink.received).padStart(5)}`,
      );
      if (row.completed + row.ended_otherwise >= contacts && sink.received >= 2 * contacts) {
        settledAt = Date.now();
        break;
      }
    }
    console.log('\nafter the last track call (every second)');
    for (const line of timeline) console.log(`  ${line}`);
    const [byStatus] = await orm.em.fork().execute(
      `select coalesce(json_object_agg(status, n), '{}') as statuses from (select status, count(*)::int as n from workflow_executions where workflow_id = ? group by status) s`,
      [workflowId],
    );
    printFigures(`${contacts.toLocaleString('en')} contacts tracked into SEND_EMAIL → DELAY 0.1 min → SEND_EMAIL, local SMTP sink`, {
      'track calls refused': refused,
      'seconds to track them all': trackSeconds.toFixed(1),
      'executions by status': JSON.stringify(byStatus.statuses),
      'mails the sink received': sink.received,
      'seconds, last track → all done': settledAt ? ((settledAt - lastTrackAt) / 1000).toFixed(1) : `not done after 300 s (${completed} completed)`,
      'target (seconds)': 60,
    });
  } finally {
    await orm.close();
    await stack.stop();
    await sink.close();
    await dns.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
