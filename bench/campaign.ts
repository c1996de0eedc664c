/**
 * A campaign to 100,000 contacts delivered into a local SMTP sink: target ≥ 1,000 emails/s end
 * to end (listmonk's author reports about 700/s in production), with the worker's memory flat.
 * API, worker, Temporal dev server, PostgreSQL, the sink and this script share the 2-core machine.
 *
 *   node --import tsx bench/campaign.ts [contacts=100000] [workers=1]
 *
 * Every email is rendered per contact (Handlebars, tracking links, the unsubscribe footer),
 * recorded, DKIM-signed and handed over by SMTP. Prints the rate each second, the end-to-end rate
 * (send request to SENT) and the worker's resident memory over the run.
 */
import fs from 'node:fs';
import crypto from 'node:crypto';
import { startBenchStack, printFigures } from './support/benchStack';
import { startSmtpSink } from './support/smtpSink';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { startTestDnsServer } from '../test/support/dnsServer';
import { spawnService } from '../test/support/processes';
import { createOrm } from '../db/orm';

function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
  } catch {
    return 0;
  }
}

async function main() {
  const contacts = Number(process.argv[2] ?? 100_000);
  const extraWorkers = Math.max(0, Number(process.argv[3] ?? 1) - 1);
  const dns = await startTestDnsServer();
  const sink = await startSmtpSink();
  const stack = await startBenchStack({ worker: true, env: { SMTP_URL: sink.url, DNS_SERVERS: dns.address } });
  const more = [];
  for (let i = 0; i < extraWorkers; i++) {
    const w = spawnService('worker/main.ts', { ...stack.env, SMTP_URL: sink.url, DNS_SERVERS: dns.address, LOG_LEVEL: 'warn' }, ['--max-old-space-size=384']);
    more.push(w);
  }
  const orm = await createOrm(stack.databaseUrl);
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const domain = `bench-${crypto.randomBytes(3).toString('hex')}.example.com`;
    const added = await http.post('/domains', { domain }, { key: project.secretKey });
    const dkim = added.body.records.find((r: { purpose: string }) => r.purpose === 'DKIM');
    dns.setTxt(dkim.name, [dkim.value]);
    await http.get(`/domains/${added.body.id}/verify`, { key: project.secretKey });

    await orm.em.fork().execute(
      `insert into contacts (project_id, email, subscribed, data)
       select ?, 'reader' || g || '@bench.example', true, jsonb_build_object('firstName', 'Reader ' || g, 'plan', case when g % 3 = 0 then 'pro' else 'free' end)
       from generate_series(1, ?) g`,
      [project.id, contacts],
    );
    const created = await http.post(
      '/campaigns',
      {
        name: 'Bench',
        subject: 'News for {{firstName}}',
        body: '<html><body><h1>Hello {{firstName}}</h1><p>Your plan: {{plan}}. <a href="https://example.com/news">Read the news</a> or <a href="https://example.com/offers">see offers</a>.</p></body></html>',
        from: `news@${domain}`,
        audienceType: 'ALL',
      },
      { key: project.secretKey },
    );
    const campaignId = created.body.data.id;
    const pids = [stack.pids.worker!, ...more.map((w) => w.process.pid!)];
    const rssAtStart = pids.map(rssMb);

    const startedAt = Date.now();
    const send = await http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey });
    if (send.status !== 200) throw new Error(`send answered ${send.status}: ${send.text}`);
    const timeline: string[] = [];
    const rssSamples: number[][] = [];
    let lastSink = 0;
    let status = 'SENDING';
    for (let second = 1; status !== 'SENT' && second < 900; second++) {
      await new Promise((r) => setTimeout(r, 1000));
      const now = sink.received;
      const rss = pids.map(rssMb);
      rssSamples.push(rss);
      if (second % 5 === 0 || now - lastSink === 0)
        timeline.push(`${String(second).padStart(4)} s  delivered ${String(now).padStart(7)}  (+${now - lastSink}/s)  worker RSS ${rss.join(' / ')} MB`);
      lastSink = now;
      const [row] = await orm.em.fork().execute(`select status from campaigns where id = ?`, [campaignId]);
      status = row.status;
    }
    const seconds = (Date.now() - startedAt) / 1000;
    console.log('\ncampaign timeline (every 5 s)');
    for (const line of timeline) console.log(`  ${line}`);
    const [emails] = await orm.em
      .fork()
      .execute(`select count(*)::int as n, count(*) filter (where status = 'SENT')::int as sent from emails where campaign_id = ?`, [campaignId]);
    const peak = pids.map((_, i) => Math.max(...rssSamples.map((s) => s[i])));
    printFigures(`Campaign to ${contacts.toLocaleString('en')} contacts, ${pids.length} worker process(es), local SMTP sink`, {
      'status at the end': status,
      'emails recorded / SENT': `${emails.n} / ${emails.sent}`,
      'messages the sink received': sink.received,
      'seconds, send request to SENT': seconds.toFixed(1),
      'emails/s end to end': Math.round(sink.received / seconds),
      'worker RSS at start (MB)': rssAtStart.join(' / '),
      'worker RSS peak (MB)': peak.join(' / '),
      'worker RSS at the end (MB)': (rssSamples[rssSamples.length - 1] ?? []).join(' / '),
    });
  } finally {
    for (const w of more) {
      w.kill('SIGTERM');
      await w.exited;
    }
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
