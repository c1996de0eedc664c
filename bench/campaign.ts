/**
 * A campaign delivered into a local SMTP sink, timed from the send call to the last mail at the
 * sink. Target (issue 21): ≥ 2,500 mails/s for 20,000 and 100,000 contacts, every contact exactly
 * once, worker peak RSS ≤ 300 MiB. API, worker, Temporal dev server, PostgreSQL, the sink (its own
 * process) and this script share the 2-core machine.
 *
 *   node --import tsx bench/campaign.ts [contacts=20000] [workers=1]
 *   BENCH_PROFILE=1 …   also profiles the worker and prints where its CPU went per message, by stage
 *   BENCH_SETUP_SQL="…" runs these statements on the bench database before the send (experiments)
 *   BENCH_ALLOC_PROFILE=1 also prints what the worker allocated per message, by stage (its garbage)
 *   BENCH_BODY_KB=28    a newsletter of about that many KB of HTML (an article with a tracked link
 *                       per KB) instead of the short body
 *
 * The campaign is MARKETING (so the unsubscribe footer and List-Unsubscribe apply), its subject and
 * body personalised, with two tracked links and the open pixel, from a verified domain, so every
 * message is DKIM-signed (RSA-2048); one sampled message's signature is verified against DNS.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { startBenchStack, printFigures, servicesFrom, type BenchStack } from './support/benchStack';
import { startSmtpSink } from './support/smtpSink';
import { printProfileStages } from './support/cpuProfileStages';
import { printAllocationStages } from './support/allocationStages';
import { cpuSnapshot, cpuPerUnit } from './support/processCpu';
import { rowWriteSnapshot, rowWritesPerUnit } from './support/rowWrites';
import { statementCosts, statementCostsSkipped } from './support/statementCosts';
import { HttpClient } from '../test/support/http';
import { accountWithProject, type TestProject } from '../test/support/accounts';
import { startTestDnsServer } from '../test/support/dnsServer';
import { spawnService } from '../test/support/processes';
import { createOrm, type Orm } from '../db/orm';

/** The campaign's body: the short one, or BENCH_BODY_KB of newsletter articles around it. */
function campaignBody(): string {
  const short =
    '<h1>Hello {{firstName}}</h1><p>Your plan: {{plan}}. <a href="https://example.com/news">Read the news</a> or <a href="https://example.com/offers">see offers</a>.</p>';
  const kb = Number(process.env.BENCH_BODY_KB ?? 0);
  const articles: string[] = [];
  for (let i = 0, size = 0; size < kb * 1024; i++) {
    const article =
      `<tr><td style="padding:16px 24px;font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:22px;color:#333333">` +
      `<h2 style="margin:0 0 8px;font-size:18px;color:#111111">Story ${i}: what changed this week</h2>` +
      `<p style="margin:0 0 12px">Article ${i} tells what the team shipped, why it matters to readers like you, and what comes next. ` +
      `It runs a few sentences, as a newsletter's stories do, with a picture above it and a link below it.</p>` +
      `<img src="https://cdn.example.com/story-${i}.jpg" width="552" alt="Story ${i}" style="display:block;border:0">` +
      `<a href="https://example.com/stories/${i}?utm_source=newsletter" style="color:#2563eb">Read story ${i}</a></td></tr>`;
    articles.push(article);
    size += article.length;
  }
  const table = articles.length ? `<table role="presentation" width="100%" cellpadding="0" cellspacing="0">${articles.join('')}</table>` : '';
  return `<html><body>${short}${table}</body></html>`;
}

function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
  } catch {
    return 0;
  }
}

/** What a campaign run gives the bench that runs it (bench/webhooks.ts compares two). */
export interface CampaignRun {
  received: number;
  /** Epoch milliseconds of the send call and of the last mail at the sink. */
  startedAt: number;
  lastAt: number;
  /** Send call → last mail. */
  mailsPerSecond: number;
}

export interface CampaignRunOptions {
  /** More settings for the API and worker. */
  env?: Record<string, string>;
  /** Runs after the campaign is created, before the send call (and the measured span). */
  beforeSend?: (ctx: { http: HttpClient; project: TestProject; stack: BenchStack; orm: Orm }) => Promise<void>;
  /** Runs after the figures are printed, while the stack still runs. */
  afterSend?: (run: CampaignRun) => Promise<void>;
}

/** One campaign to `contacts` contacts on a fresh stack, its figures printed. */
export async function runCampaignBench(contacts: number, workers = 1, options: CampaignRunOptions = {}): Promise<CampaignRun> {
  const extraWorkers = Math.max(0, workers - 1);
  const profileDir = process.env.BENCH_PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-campaign-profile-')) : null;
  if (profileDir)
    process.env.BENCH_WORKER_NODE_ARGS = `${process.env.BENCH_WORKER_NODE_ARGS ?? '--max-old-space-size=384'} --cpu-prof --cpu-prof-dir=${profileDir}`;
  const allocationProfile = process.env.BENCH_ALLOC_PROFILE ? path.join(os.tmpdir(), `mailroom-campaign-allocations-${process.pid}.json`) : null;
  if (allocationProfile) {
    process.env.MAILROOM_ALLOC_PROFILE = allocationProfile;
    process.env.BENCH_WORKER_NODE_ARGS = `${process.env.BENCH_WORKER_NODE_ARGS ?? '--max-old-space-size=384'} --require ${path.join(__dirname, 'support', 'allocationSampling.cjs')}`;
  }
  const dns = await startTestDnsServer();
  const sink = await startSmtpSink();
  const stack = await startBenchStack({ worker: true, env: { SMTP_URL: sink.url, DNS_SERVERS: dns.address, ...options.env } });
  const more = [];
  for (let i = 0; i < extraWorkers; i++) {
    const w = spawnService(
      'worker/main.ts',
      { ...stack.env, SMTP_URL: sink.url, DNS_SERVERS: dns.address, LOG_LEVEL: 'warn' },
      ['--max-old-space-size=384'],
      servicesFrom,
    );
    more.push(w);
  }
  const orm = await createOrm(stack.databaseUrl);
  let span: { from: number; to: number } | null = null;
  let sentCount = 0;
  let run: CampaignRun | null = null;
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
    await orm.em.fork().execute('vacuum analyze contacts');
    // For experiments on what the database's share costs, e.g. "drop index events_project_seq_index".
    if (process.env.BENCH_SETUP_SQL) await orm.em.fork().execute(process.env.BENCH_SETUP_SQL);
    const created = await http.post(
      '/campaigns',
      {
        name: 'Bench',
        type: 'MARKETING',
        subject: 'News for {{firstName}}',
        body: campaignBody(),
        from: `news@${domain}`,
        audienceType: 'ALL',
      },
      { key: project.secretKey },
    );
    const campaignId = created.body.data.id;
    await options.beforeSend?.({ http, project, stack, orm });
    const pids = [stack.pids.worker!, ...more.map((w) => w.process.pid!)];
    const rssAtStart = pids.map(rssMb);
    // Mail sent before the campaign (the account's own) is not the campaign's.
    await sink.markStart();
    const before = sink.counts;

    if (allocationProfile) {
      // The worker's sampler polls for this file and answers with `.started` once it samples.
      fs.writeFileSync(`${allocationProfile}.start`, '');
      for (let waited = 0; !fs.existsSync(`${allocationProfile}.started`); waited += 20) {
        if (waited > 5_000) throw new Error('the worker did not start sampling its allocations (is allocationSampling.cjs preloaded?)');
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    const writesAtSend = await rowWriteSnapshot(orm);
    const statements = await statementCosts(orm);
    if ('reset' in statements) await statements.reset();
    else console.log(statementCostsSkipped(statements));
    const cpuAtSend = cpuSnapshot();
    const startedAt = Date.now();
    const send = await http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey });
    if (send.status !== 200) throw new Error(`send answered ${send.status}: ${send.text}`);
    const timeline: string[] = [];
    const rssSamples: number[][] = [];
    let lastReceived = 0;
    let status = 'SENDING';
    for (let tick = 1; (status !== 'SENT' || sink.counts.distinctRecipients - before.distinctRecipients < contacts) && tick < 3600; tick++) {
      await new Promise((r) => setTimeout(r, 250));
      rssSamples.push(pids.map(rssMb));
      if (tick % 4 === 0) {
        const now = sink.counts.received - before.received;
        if (tick % (process.env.BENCH_TIMELINE_EVERY_SECOND ? 4 : 20) === 0 || now === lastReceived)
          timeline.push(
            `${String(tick / 4).padStart(4)} s  delivered ${String(now).padStart(7)}  (+${now - lastReceived}/s)  worker RSS ${rssSamples[rssSamples.length - 1].join(' / ')} MB`,
          );
        lastReceived = now;
        const [row] = await orm.em.fork().execute(`select status from campaigns where id = ?`, [campaignId]);
        status = row.status;
      }
    }
    const cpuAtEnd = cpuSnapshot();
    const writesAtEnd = await rowWriteSnapshot(orm);
    const counts = sink.counts;
    const received = counts.received - before.received;
    sentCount = received;
    span = { from: startedAt, to: counts.lastAt };
    console.log('\ncampaign timeline (every 5 s)');
    for (const line of timeline) console.log(`  ${line}`);
    const [emails] = await orm.em
      .fork()
      .execute(`select count(*)::int as n, count(*) filter (where status = 'SENT')::int as sent from emails where campaign_id = ?`, [campaignId]);
    const peak = pids.map((_, i) => Math.max(...rssSamples.map((s) => s[i])));
    const toLast = (counts.lastAt - startedAt) / 1000;
    const firstToLast = (counts.lastAt - counts.firstAt) / 1000;
    const sample = sink.sample('News for Reader');
    let dkimResult = 'no sampled message';
    if (sample) {
      const { results } = await dkimVerify(sample, {
        resolver: async (name: string) => {
          if (name === dkim.name) return [[dkim.value]];
          throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
        },
      });
      dkimResult = results.map((r: { status: { result: string } }) => r.status.result).join(', ');
    }
    printFigures(`Campaign to ${contacts.toLocaleString('en')} contacts, ${pids.length} worker process(es), local SMTP sink`, {
      'status at the end': status,
      'emails recorded / SENT': `${emails.n} / ${emails.sent}`,
      'messages at the sink (distinct rcpt)': `${received} (${counts.distinctRecipients - before.distinctRecipients})`,
      'duplicates at the sink': counts.duplicates - before.duplicates,
      'seconds, send call → last mail': toLast.toFixed(2),
      'mails/s, send call → last mail': Math.round(received / toLast),
      'mails/s, first mail → last mail': Math.round(received / firstToLast),
      'first mail after the send call (s)': ((counts.firstAt - startedAt) / 1000).toFixed(2),
      'DKIM of a sampled message': dkimResult,
      'worker RSS at start (MB)': rssAtStart.join(' / '),
      'worker RSS peak (MB)': peak.join(' / '),
      'worker RSS at the end (MB)': (rssSamples[rssSamples.length - 1] ?? []).join(' / '),
      // From the send call to the poll that saw the last mail (within 250 ms of it).
      ...cpuPerUnit(cpuAtSend, cpuAtEnd, received),
      // Webhook messages aside (issue 39's count); rollups and the like included.
      ...(await rowWritesPerUnit(orm, writesAtSend, writesAtEnd, received, ['webhook_messages'])),
      ...('perUnit' in statements ? await statements.perUnit(received) : {}),
    });
    run = { received, startedAt, lastAt: counts.lastAt, mailsPerSecond: received / toLast };
    await options.afterSend?.(run);
  } finally {
    for (const w of more) {
      w.kill('SIGTERM');
      await w.exited;
    }
    await orm.close();
    await stack.stop();
    const exitedAt = Date.now();
    await sink.close();
    await dns.close();
    if (profileDir && span) {
      console.log(`\nWhere the worker's CPU went from the send call to the last mail (--cpu-prof; profiling slows it down)`);
      printProfileStages(profileDir, stack.pids.worker!, sentCount, { ...span, exitedAt });
    }
    if (allocationProfile && sentCount && fs.existsSync(allocationProfile)) {
      printAllocationStages(allocationProfile, sentCount);
      fs.rmSync(allocationProfile);
      fs.rmSync(`${allocationProfile}.start`, { force: true });
      fs.rmSync(`${allocationProfile}.started`, { force: true });
    }
  }
  return run;
}

// Imported by bench/webhooks.ts, which runs its own campaigns.
if (require.main === module) {
  runCampaignBench(Number(process.argv[2] ?? 20_000), Number(process.argv[3] ?? 1)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
