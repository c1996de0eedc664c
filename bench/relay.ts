/**
 * The SMTP relay (contract 20, issue 26): target 300 messages/s for 60 s over 20 authenticated
 * connections, p99 of the DATA reply < 150 ms, 0 errors, delivered at the same rate. API (with
 * its submission listener), worker, Temporal dev server, PostgreSQL, the SMTP sink and this load
 * generator share this 2-core machine.
 *
 *   node --import tsx bench/relay.ts [durationSeconds=60] [rate=300] [connections=20]
 *
 * Each connection authenticates once (AUTH PLAIN with the secret key) and then submits messages
 * one after another (MAIL, RCPT, DATA), taking a slot from a shared pacer that hands out `rate`
 * slots a second. The DATA reply's latency is measured from the end of the message (the final
 * dot) to the `250 2.0.0 queued as <id>`. Every second it prints submitted/s, delivered/s (emails
 * recorded SENT) and the backlog; after the load it waits for the backlog to drain.
 */
import crypto from 'node:crypto';
import { startBenchStack, printFigures } from './support/benchStack';
import { startSmtpSink } from './support/smtpSink';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { startTestDnsServer } from '../test/support/dnsServer';
import { smtpDialog, type SmtpDialog } from '../test/support/smtpDialog';
import { createOrm } from '../db/orm';
import { findFreePort } from '../lib/freePort';

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Hands out `rate` slots a second, evenly; `take` resolves at the caller's slot (or null once the load is over). */
function pacer(rate: number, endsAt: number) {
  let next = Date.now();
  const interval = 1000 / rate;
  return async (): Promise<boolean> => {
    const at = next;
    next += interval;
    if (at >= endsAt) return false;
    const wait = at - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return true;
  };
}

function message(domain: string, n: number): string {
  const id = `${n}-${crypto.randomBytes(6).toString('hex')}`;
  const boundary = `b-${id}`;
  return [
    `From: Bench <hello@${domain}>`,
    `To: reader${n}@bench.example`,
    `Subject: Order A-${n} confirmed`,
    `Message-ID: <${id}@bench.app>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Hello reader ${n}, your order A-${n} ships today. Track it at https://shop.example/orders/A-${n}`,
    `--${boundary}`,
    'Content-Type: text/html; charset=utf-8',
    '',
    `<p>Hello reader ${n}, your order A-${n} ships today. <a href="https://shop.example/orders/A-${n}">Track it</a></p>`,
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

async function main() {
  const duration = Number(process.argv[2] ?? 60);
  const rate = Number(process.argv[3] ?? 300);
  const connections = Number(process.argv[4] ?? 20);
  const dns = await startTestDnsServer();
  const sink = await startSmtpSink();
  const submissionPort = await findFreePort();
  const stack = await startBenchStack({
    worker: true,
    env: {
      RATE_LIMIT_PER_MINUTE: '100000000',
      SMTP_URL: sink.url,
      DNS_SERVERS: dns.address,
      SUBMISSION_SMTP_PORT: String(submissionPort),
      INBOUND_SMTP_PORT: '0',
      SMTP_LISTEN_HOST: '127.0.0.1',
    },
  });
  const orm = await createOrm(stack.databaseUrl);
  const dialogs: SmtpDialog[] = [];
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const domain = `bench-${crypto.randomBytes(3).toString('hex')}.example.com`;
    const added = await http.post('/domains', { domain }, { key: project.secretKey });
    const dkim = added.body.records.find((r: { purpose: string }) => r.purpose === 'DKIM');
    dns.setTxt(dkim.name, [dkim.value]);
    const verified = await http.get(`/domains/${added.body.id}/verify`, { key: project.secretKey });
    if (verified.body.status !== 'VERIFIED') throw new Error('the bench domain did not verify');

    for (let i = 0; i < connections; i++) {
      const dialog = await smtpDialog(submissionPort);
      const auth = await dialog.authPlain('bench', project.secretKey);
      if (auth.code !== 235) throw new Error(`AUTH answered ${auth.text}`);
      dialogs.push(dialog);
    }

    let n = 0;
    const latencies: number[] = [];
    const errors = new Map<string, number>();
    const submit = async (dialog: SmtpDialog): Promise<void> => {
      const i = ++n;
      const steps = [
        await dialog.command(`MAIL FROM:<hello@${domain}>`),
        await dialog.command(`RCPT TO:<reader${i}@bench.example>`),
        await dialog.command('DATA'),
      ];
      const refused = steps.find((s, k) => s.code !== (k === 2 ? 354 : 250));
      if (refused) {
        errors.set(refused.text.slice(0, 60), (errors.get(refused.text.slice(0, 60)) ?? 0) + 1);
        await dialog.command('RSET');
        return;
      }
      const started = performance.now();
      const reply = await dialog.message(message(domain, i));
      latencies.push(performance.now() - started);
      if (!/^250 2\.0\.0 queued as /.test(reply.text)) errors.set(reply.text.slice(0, 60), (errors.get(reply.text.slice(0, 60)) ?? 0) + 1);
    };
    const counts = async () => {
      const [row] = await orm.em
        .fork()
        .execute(`select count(*)::int as accepted, count(*) filter (where status = 'SENT')::int as sent from emails where project_id = ?`, [project.id]);
      return row as { accepted: number; sent: number };
    };

    // Warm-up: JIT, pools, the first workflow tasks.
    await Promise.all(
      dialogs.map(async (d) => {
        for (let k = 0; k < 10; k++) await submit(d);
      }),
    );
    for (let waited = 0; waited < 60; waited++) {
      const c = await counts();
      if (c.sent >= c.accepted) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    latencies.length = 0;
    errors.clear();

    const start = await counts();
    const sinkAtStart = sink.counts;
    const timeline: string[] = [];
    let last = start;
    let second = 0;
    const sampler = setInterval(() => {
      void counts().then(
        (c) => {
          second++;
          timeline.push(
            `${String(second).padStart(3)} s  submitted/s ${String(c.accepted - last.accepted).padStart(4)}  delivered/s ${String(c.sent - last.sent).padStart(4)}  backlog ${c.accepted - c.sent}`,
          );
          last = c;
        },
        () => undefined,
      );
    }, 1000);
    const loadStarted = Date.now();
    const take = pacer(rate, loadStarted + duration * 1000);
    await Promise.all(
      dialogs.map(async (dialog) => {
        while (await take()) await submit(dialog);
      }),
    );
    const loadSeconds = (Date.now() - loadStarted) / 1000;
    const loadEnded = Date.now();
    const atLoadEnd = await counts();
    let drained = atLoadEnd;
    while (drained.sent < drained.accepted && Date.now() - loadEnded < 120_000) {
      await new Promise((r) => setTimeout(r, 250));
      drained = await counts();
    }
    const drainSeconds = (Date.now() - loadEnded) / 1000;
    clearInterval(sampler);
    console.log('\nper-second timeline');
    for (const line of timeline) console.log(`  ${line}`);

    const sorted = [...latencies].sort((a, b) => a - b);
    const accepted = atLoadEnd.accepted - start.accepted;
    // How the accepted emails were grouped into delivery workflows (each one a start and its tasks on Temporal).
    const [grouping] = await orm.em
      .fork()
      .execute<Array<{ workflows: number }>>(
        `select count(distinct delivery_workflow_id)::int as workflows from emails where project_id = ? and delivery_workflow_id is not null`,
        [project.id],
      );
    printFigures(`SMTP relay, ${rate} messages/s offered, ${connections} authenticated connections, ${duration} s`, {
      'messages submitted': latencies.length,
      'accepted messages/s (mean)': Math.round(accepted / loadSeconds),
      'DATA reply p50 (ms)': percentile(sorted, 50).toFixed(1),
      'DATA reply p90 (ms)': percentile(sorted, 90).toFixed(1),
      'DATA reply p99 (ms)': percentile(sorted, 99).toFixed(1),
      'DATA reply max (ms)': (sorted[sorted.length - 1] ?? 0).toFixed(1),
      errors: [...errors.values()].reduce((a, b) => a + b, 0),
      'delivered/s during the load': Math.round((atLoadEnd.sent - start.sent) / loadSeconds),
      'backlog at the end of the load': atLoadEnd.accepted - atLoadEnd.sent,
      'seconds to drain it': drainSeconds.toFixed(1),
      'delivered/s overall (load + drain)': Math.round((drained.sent - start.sent) / (loadSeconds + drainSeconds)),
      'messages the sink received': sink.received - sinkAtStart.received,
      'delivery workflows (emails per one)': `${grouping.workflows} (${(accepted / Math.max(1, grouping.workflows)).toFixed(1)})`,
    });
    for (const [text, count] of errors) console.log(`  error ×${count}: ${text}`);
  } finally {
    for (const d of dialogs) d.close();
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
