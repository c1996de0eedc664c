/**
 * 1,000 contacts tracked into a three-step automation (SEND_EMAIL, DELAY 0.1 minute, SEND_EMAIL)
 * with a local SMTP sink: target every execution COMPLETED and 2,000 mails in the sink within
 * 60 s of the last track call. API, worker, Temporal dev server, PostgreSQL, the sink and this
 * script share the machine.
 *
 *   node --import tsx bench/workflowExecutions.ts [contacts=1000] [concurrency=50]
 *
 * The workflow is built and enabled through the definition API; the contacts are created by the
 * track calls themselves. Prints the time from the last track call to the last completion and the
 * last mail, with a timeline.
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
  const stack = await startBenchStack({ worker: true, env: { SMTP_URL: sink.url, DNS_SERVERS: dns.address, RATE_LIMIT_PER_MINUTE: '0' } });
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

    const template = await http.post(
      '/templates',
      {
        name: 'Welcome',
        subject: 'Welcome {{firstName}}',
        body: '<p>Hello {{firstName}}, <a href="https://example.com/start">start here</a></p>',
        from: `hi@${domain}`,
        type: 'TRANSACTIONAL',
      },
      key,
    );
    const workflow = (await http.post('/workflows', { name: 'Bench', eventName: 'signed-up', allowReentry: false }, key)).body;
    const trigger = workflow.steps.find((s: { type: string }) => s.type === 'TRIGGER').id;
    const step = async (type: string, config: Record<string, unknown>) => {
      const res = await http.post(`/workflows/${workflow.id}/steps`, { type, config }, key);
      if (res.status !== 201) throw new Error(`step answered ${res.status}: ${res.text}`);
      return res.body.id as string;
    };
    const first = await step('SEND_EMAIL', { templateId: template.body.id });
    const pause = await step('DELAY', { amount: 0.1, unit: 'minutes' });
    const second = await step('SEND_EMAIL', { templateId: template.body.id });
    for (const [fromStepId, toStepId] of [
      [trigger, first],
      [first, pause],
      [pause, second],
    ])
      await http.post(`/workflows/${workflow.id}/transitions`, { fromStepId, toStepId }, key);
    const enabled = await http.patch(`/workflows/${workflow.id}`, { enabled: true }, key);
    if (enabled.status !== 200) throw new Error(`enable answered ${enabled.status}: ${enabled.text}`);

    const trackAll = async (event: string, prefix: string) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < contacts) {
            const i = next++;
            const res = await http.post(
              '/v1/track',
              { email: `${prefix}${i}@bench.example`, event, data: { firstName: `Reader ${i}` } },
              { key: project.publicKey },
            );
            if (res.status !== 200) throw new Error(`track answered ${res.status}: ${res.text}`);
          }
        }),
      );
    };
    // The same number of tracks of an event no workflow listens for, under the same conditions:
    // what the tracks below would cost without the executions they start.
    const baselineStartedAt = Date.now();
    await trackAll('page-view', 'visitor');
    const baselineSeconds = (Date.now() - baselineStartedAt) / 1000;

    // The sink already holds the account's verification mail.
    const sinkBefore = sink.received;
    const trackStartedAt = Date.now();
    await trackAll('signed-up', 'reader');
    const lastTrackAt = Date.now();
    const timeline: string[] = [];
    let completedAt: number | null = null;
    let mailedAt: number | null = null;
    let completed = 0;
    for (let second = 1; (completedAt === null || mailedAt === null) && second <= 180; second++) {
      await new Promise((r) => setTimeout(r, 1000));
      const [row] = await orm.em
        .fork()
        .execute(
          `select count(*) filter (where status = 'COMPLETED')::int as completed, count(*)::int as total from workflow_executions where workflow_id = ?`,
          [workflow.id],
        );
      completed = row.completed;
      if (completed >= contacts && completedAt === null) completedAt = Date.now();
      if (sink.received - sinkBefore >= contacts * 2 && mailedAt === null) mailedAt = Date.now();
      timeline.push(`${String(second).padStart(4)} s  executions ${row.total} (completed ${completed})  mails in the sink ${sink.received - sinkBefore}`);
    }
    console.log('\ntimeline (from the last track call)');
    for (const line of timeline.filter((_, i) => i % 5 === 4 || i === timeline.length - 1)) console.log(`  ${line}`);
    const end = Math.max(completedAt ?? Date.now(), mailedAt ?? Date.now());
    printFigures(`${contacts.toLocaleString('en')} contacts tracked into SEND_EMAIL → DELAY 0.1 min → SEND_EMAIL, local SMTP sink`, {
      'track calls of an event no workflow listens for (s)': baselineSeconds.toFixed(1),
      'track calls starting executions (s)': ((lastTrackAt - trackStartedAt) / 1000).toFixed(1),
      'executions COMPLETED': `${completed} / ${contacts}`,
      'mails in the sink': `${sink.received - sinkBefore} / ${contacts * 2}`,
      'last track → all COMPLETED (s)': completedAt ? ((completedAt - lastTrackAt) / 1000).toFixed(1) : 'not within 180 s',
      'last track → all mail in the sink (s)': mailedAt ? ((mailedAt - lastTrackAt) / 1000).toFixed(1) : 'not within 180 s',
      'target (s)': 60,
      verdict: completedAt && mailedAt && end - lastTrackAt <= 60_000 ? 'met' : 'missed',
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
