/**
 * The inbound SMTP listener (contract 20, issue 26): target ≥ 200 messages/s accepted and
 * processed (record + email.received) over 20 SMTP connections delivering 10 KB messages for
 * 60 s, p99 of the DATA reply < 250 ms, the worker's memory flat. Load generator (nodemailer),
 * API, worker, Temporal dev server and PostgreSQL share this machine.
 *
 *   node --import tsx bench/inbound.ts [durationSeconds=60] [connections=20] [messagesPerSecond]
 *
 * Without a rate, the connections send as fast as they are answered (what reception takes at
 * most); with one, the messages are offered at that rate in all, to show whether processing
 * keeps up with it (the backlog stays small) while the listener takes it.
 * Every second it prints accepted/s, processed/s (INBOUND records written), the backlog (stored,
 * not processed) and the worker's RSS; after the load it waits for the backlog to drain.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import nodemailer from 'nodemailer';
import { startBenchStack, printFigures } from './support/benchStack';
import { HttpClient } from '../test/support/http';
import { accountWithProject } from '../test/support/accounts';
import { startTestDnsServer } from '../test/support/dnsServer';
import { createOrm } from '../db/orm';
import { findFreePort } from '../lib/freePort';

const MESSAGE_BYTES = 10 * 1024;

function rssMb(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main() {
  const duration = Number(process.argv[2] ?? 60);
  const connections = Number(process.argv[3] ?? 20);
  const rate = process.argv[4] ? Number(process.argv[4]) : null;
  const dns = await startTestDnsServer();
  const inboundPort = await findFreePort();
  const stack = await startBenchStack({
    worker: true,
    env: { RATE_LIMIT_PER_MINUTE: '100000000', DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500', INBOUND_SMTP_PORT: String(inboundPort) },
  });
  const orm = await createOrm(stack.databaseUrl);
  try {
    const http = new HttpClient(stack.apiUrl);
    const { project } = await accountWithProject(http);
    const domain = `bench-${crypto.randomBytes(3).toString('hex')}.example.com`;
    const added = await http.post('/domains', { domain }, { key: project.secretKey });
    const dkim = added.body.records.find((r: { purpose: string }) => r.purpose === 'DKIM');
    dns.setTxt(dkim.name, [dkim.value]);
    const verified = await http.get(`/domains/${added.body.id}/verify`, { key: project.secretKey });
    if (verified.body.status !== 'VERIFIED') throw new Error('the bench domain did not verify');
    // The senders' SPF: what every received message is checked against.
    dns.setTxt('sender.bench.example', ['v=spf1 ip4:127.0.0.1 -all']);

    const counts = async () => {
      const [row] = await orm.em.fork().execute(
        `select (select count(*)::int from inbound_messages) as accepted,
                (select count(*)::int from emails where project_id = ? and source = 'INBOUND') as processed,
                (select count(*)::int from events where project_id = ? and name = 'email.received') as events`,
        [project.id, project.id],
      );
      return row as { accepted: number; processed: number; events: number };
    };

    const filler = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(Math.ceil(MESSAGE_BYTES / 58)).slice(0, MESSAGE_BYTES - 600);
    const latencies: number[] = [];
    let errors = 0;
    let sent = 0;
    const end = Date.now() + duration * 1000;
    let loadStarted = Date.now();
    const rssSamples: number[] = [];
    let maxBacklog = 0;

    const client = async (c: number) => {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: inboundPort,
        secure: false,
        ignoreTLS: true,
        pool: true,
        maxConnections: 1,
        maxMessages: Infinity,
      });
      try {
        while (Date.now() < end) {
          const n = sent++;
          // With a rate, message n is due n/rate seconds after the start; a late one goes at once.
          if (rate) {
            const due = loadStarted + (n * 1000) / rate;
            if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
            if (Date.now() >= end) break;
          }
          const started = process.hrtime.bigint();
          try {
            await transport.sendMail({
              from: `sender${c}@sender.bench.example`,
              to: `support+t-${n}@${domain}`,
              subject: `Ticket ${n}`,
              text: `Hello,\n\n${filler}\n\nOn Mon, someone wrote:\n> earlier\n`,
            });
            // nodemailer resolves after the reply to the final dot: the DATA reply's latency.
            latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
          } catch {
            errors++;
          }
        }
      } finally {
        transport.close();
      }
    };

    const startCounts = await counts();
    let last = startCounts;
    const ticker = setInterval(() => {
      void counts().then((now) => {
        const rss = rssMb(stack.pids.worker);
        if (Date.now() < end) maxBacklog = Math.max(maxBacklog, now.accepted - now.processed);
        rssSamples.push(rss);
        console.log(
          `accepted/s ${now.accepted - last.accepted}  processed/s ${now.processed - last.processed}  backlog ${now.accepted - now.processed}  worker RSS ${rss.toFixed(0)} MB`,
        );
        last = now;
      });
    }, 1000);
    loadStarted = Date.now();
    await Promise.all(Array.from({ length: connections }, (_, c) => client(c)));
    const loadSeconds = (Date.now() - loadStarted) / 1000;
    const afterLoad = await counts();
    // Drain: until every accepted message is processed (or two minutes pass).
    const drainUntil = Date.now() + 120_000;
    let final = afterLoad;
    while (Date.now() < drainUntil) {
      final = await counts();
      if (final.processed >= final.accepted - startCounts.accepted) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const drainedAt = Date.now();
    clearInterval(ticker);

    const sorted = [...latencies].sort((a, b) => a - b);
    const accepted = afterLoad.accepted - startCounts.accepted;
    printFigures(
      `inbound: ${connections} SMTP connections, ${MESSAGE_BYTES / 1024} KB messages, ${duration} s, ${rate ? `offered at ${rate}/s` : 'as fast as answered'}`,
      {
        'largest backlog during the load': maxBacklog,
        'messages accepted': accepted,
        'accepted/s': (accepted / loadSeconds).toFixed(1),
        'processed during the load/s': ((afterLoad.processed - startCounts.processed) / loadSeconds).toFixed(1),
        'processed/s (load + drain)': ((final.processed - startCounts.processed) / ((drainedAt - loadStarted) / 1000)).toFixed(1),
        'processed in the end': final.processed - startCounts.processed,
        'email.received events': final.events - startCounts.events,
        'SMTP errors': errors,
        'DATA reply p50 ms': percentile(sorted, 50).toFixed(1),
        'DATA reply p99 ms': percentile(sorted, 99).toFixed(1),
        'DATA reply max ms': (sorted[sorted.length - 1] ?? 0).toFixed(1),
        'worker RSS first/last/max MB': `${(rssSamples[0] ?? 0).toFixed(0)} / ${(rssSamples[rssSamples.length - 1] ?? 0).toFixed(0)} / ${Math.max(0, ...rssSamples).toFixed(0)}`,
      },
    );
  } finally {
    await orm.close();
    await stack.stop();
    await dns.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
