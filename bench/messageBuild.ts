/**
 * What one message costs to build and DKIM-sign, one core:
 *
 *   node --import tsx bench/messageBuild.ts [messages=2000]
 *
 * (a) today's path: nodemailer's MailComposer and DKIM signer (streamTransport, buffer, CRLF),
 * (b) nodemailer's MailComposer without DKIM, (c) mail/mime's builder unsigned, (d) signed,
 * (e) the RSA-2048 signature alone (the floor), on a 3.8 KB campaign HTML body with 50 links and
 * its text part, and on a 1 KB one; every message personalised (its own name and link tokens),
 * the key a parsed KeyObject as db/domains/domainRepository hands it out. Then whether signing
 * in a worker_threads pool would pay: the postMessage round trip with the message bytes, and
 * the main thread's time per message when it hands the signing to workers.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import nodemailer from 'nodemailer';
import { buildMessage } from '../mail/mime/messageBuilder';
import { SIGNED_HEADER_FIELDS } from '../mail/mime/dkimSignature';
import type { OutgoingMail } from '../mail/mime/outgoingMail';

const messages = Number(process.argv[2] ?? 2000);
const warmUp = 300;
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkim = { domainName: 'news.example.com', keySelector: 'mr1', privateKey };

const token = () => crypto.randomBytes(12).toString('base64url');

/** A campaign body: 50 tracked links, a few typographic characters, the unsubscribe footer. */
function campaign(i: number, links: number, paragraphs: number): { html: string; text: string } {
  const name = `Reader ${i}`;
  let html = `<!doctype html><html><head><meta charset="utf-8"><title>Our November news</title></head><body style="margin:0;padding:0">\n`;
  html += `<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td style="padding:24px;font-family:Arial,sans-serif">\n`;
  html += `<h1 style="font-size:22px">Hello ${name} — here’s what’s new</h1>\n`;
  let text = `Hello ${name} — here’s what’s new\n\n`;
  for (let p = 0; p < paragraphs; p++) {
    html += `<p>This month we shipped improvements you asked for, priced from 9 € a month.</p>\n`;
    text += `This month we shipped improvements you asked for, priced from 9 € a month.\n\n`;
  }
  for (let l = 0; l < links; l++) {
    const url = `https://mr.example.com/c/${token()}`;
    html += `<a href="${url}">Item ${l + 1}</a><br>\n`;
    text += `Item ${l + 1} [${url}]\n`;
  }
  const unsubscribe = `https://mr.example.com/u/${token()}`;
  html += `<p style="font-size:12px;color:#888"><a href="${unsubscribe}">Unsubscribe</a></p></td></tr></table>`;
  html += `<img src="https://mr.example.com/o/${token()}" width="1" height="1" alt=""></body></html>\n`;
  text += `\nUnsubscribe: ${unsubscribe}\n`;
  return { html, text };
}

function mails(size: 'large' | 'small', count: number): OutgoingMail[] {
  return Array.from({ length: count }, (_, i) => {
    const body = size === 'large' ? campaign(i, 50, 1) : campaign(i, 4, 2);
    return {
      projectId: 'p',
      from: { name: 'Acme News', address: 'hello@news.example.com' },
      to: [{ name: `Reader ${i}`, address: `reader${i}@example.org` }],
      subject: `Our November news, Reader ${i}`,
      html: body.html,
      text: body.text,
      headers: { 'List-Unsubscribe': `<https://mr.example.com/u/${token()}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
      messageId: `<${crypto.randomUUID()}@news.example.com>`,
      dkim,
    };
  });
}

interface Figure {
  label: string;
  size: string;
  bytes: number;
  perMessageUs: number;
  cpuUs: number;
  p99Us: number;
}

async function measure(label: string, size: string, inputs: OutgoingMail[], run: (mail: OutgoingMail) => Promise<number> | number): Promise<Figure> {
  for (let i = 0; i < warmUp; i++) await run(inputs[i % inputs.length]);
  const times: number[] = [];
  let bytes = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < messages; i++) {
    const t = performance.now();
    bytes += await run(inputs[i % inputs.length]);
    times.push(performance.now() - t);
  }
  const total = performance.now() - started;
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return {
    label,
    size,
    bytes: Math.round(bytes / messages),
    perMessageUs: (total * 1000) / messages,
    cpuUs: (used.user + used.system) / messages,
    p99Us: times[Math.floor(times.length * 0.99)] * 1000,
  };
}

const streamNodemailer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
function nodemailerMessage(mail: OutgoingMail, signed: boolean) {
  return {
    from: mail.from,
    to: mail.to.map((t) => (typeof t === 'string' ? t : { name: t.name, address: t.address })),
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    headers: mail.headers,
    messageId: mail.messageId,
    // Today's signer with today's list of fields.
    dkim: signed ? { ...mail.dkim!, headerFieldNames: SIGNED_HEADER_FIELDS } : undefined,
  };
}

async function buildFigures(): Promise<Figure[]> {
  const figures: Figure[] = [];
  for (const size of ['large', 'small'] as const) {
    const inputs = mails(size, messages);
    figures.push(
      await measure('(a) nodemailer MailComposer + its DKIM', size, inputs, async (mail) => {
        const info = await streamNodemailer.sendMail(nodemailerMessage(mail, true));
        return (info.message as Buffer).length;
      }),
    );
    figures.push(
      await measure('(b) nodemailer MailComposer, unsigned', size, inputs, async (mail) => {
        const info = await streamNodemailer.sendMail(nodemailerMessage(mail, false));
        return (info.message as Buffer).length;
      }),
    );
    figures.push(await measure('(c) mail/mime builder, unsigned', size, inputs, (mail) => buildMessage({ ...mail, dkim: undefined }).raw.length));
    figures.push(await measure('(d) mail/mime builder + DKIM', size, inputs, (mail) => buildMessage(mail).raw.length));
    const data = Buffer.from('x'.repeat(700));
    figures.push(await measure('(e) RSA-2048 signature alone', size, inputs, () => crypto.sign('sha256', data, privateKey).length));
  }
  return figures;
}

/** A worker that signs what it is sent (or only answers, for the bare round trip). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const key = crypto.createPrivateKey(workerData.pem);
parentPort.on('message', (m) => {
  if (m.echo) return parentPort.postMessage({ id: m.id, signature: null });
  // The signer would hash the body and sign the header block; the message bytes come along.
  crypto.createHash('sha256').update(m.raw).digest();
  parentPort.postMessage({ id: m.id, signature: crypto.sign('sha256', m.raw.subarray(0, 700), key) });
});
`;

async function workerFigures() {
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const raws = mails('large', 200).map((m) => buildMessage({ ...m, dkim: undefined }).raw);
  const start = (n: number) => Array.from({ length: n }, () => new Worker(WORKER_SOURCE, { eval: true, workerData: { pem } }));
  const lines: string[] = [];

  // 1. The bare round trip, one message at a time: what a hand-over adds to each message's latency.
  {
    const [worker] = start(1);
    const ask = (id: number, echo: boolean) =>
      new Promise<void>((resolve) => {
        worker.once('message', () => resolve());
        worker.postMessage({ id, echo, raw: raws[id % raws.length] });
      });
    for (let i = 0; i < warmUp; i++) await ask(i, true);
    let t = performance.now();
    for (let i = 0; i < messages; i++) await ask(i, true);
    lines.push(`postMessage round trip with the message bytes (${raws[0].length} B), no work: ${(((performance.now() - t) * 1000) / messages).toFixed(1)} µs`);
    for (let i = 0; i < warmUp; i++) await ask(i, false);
    t = performance.now();
    for (let i = 0; i < messages; i++) await ask(i, false);
    lines.push(`same, the worker signing (latency of one hand-over):                 ${(((performance.now() - t) * 1000) / messages).toFixed(1)} µs`);
    await worker.terminate();
  }

  // 2. Pipelined: the main thread's busy time per message (event loop utilisation) and throughput.
  const inlineStart = performance.now();
  const elu0 = performance.eventLoopUtilization();
  for (let i = 0; i < messages; i++) {
    const raw = raws[i % raws.length];
    crypto.createHash('sha256').update(raw).digest();
    crypto.sign('sha256', raw.subarray(0, 700), privateKey);
  }
  const inlineMs = performance.now() - inlineStart;
  const inlineElu = performance.eventLoopUtilization(elu0);
  lines.push(
    `inline hash + sign: main thread ${((inlineElu.active * 1000) / messages).toFixed(1)} µs/message busy, ${Math.round((messages / inlineMs) * 1000)} messages/s`,
  );
  for (const poolSize of [1, 2]) {
    const pool = start(poolSize);
    await Promise.all(pool.map((w) => new Promise<void>((resolve) => (w.once('online', () => resolve()), undefined))));
    const run = async (count: number) => {
      let next = 0;
      let done = 0;
      await new Promise<void>((resolve) => {
        const inFlight = 8;
        for (const w of pool) {
          w.removeAllListeners('message');
          w.on('message', () => {
            done++;
            if (done === count) resolve();
            else if (next < count) w.postMessage({ id: next, raw: raws[next++ % raws.length] });
          });
        }
        for (let k = 0; k < inFlight * pool.length && next < count; k++) pool[k % pool.length].postMessage({ id: next, raw: raws[next++ % raws.length] });
      });
    };
    await run(warmUp);
    const elu = performance.eventLoopUtilization();
    const t = performance.now();
    await run(messages);
    const ms = performance.now() - t;
    const used = performance.eventLoopUtilization(elu);
    lines.push(
      `${poolSize} worker(s) signing: main thread ${((used.active * 1000) / messages).toFixed(1)} µs/message busy, ${Math.round((messages / ms) * 1000)} messages/s`,
    );
    await Promise.all(pool.map((w) => w.terminate()));
  }
  return lines;
}

async function main() {
  const sample = mails('large', 1)[0];
  const small = mails('small', 1)[0];
  console.log(`${messages} messages each after ${warmUp} warm-up, one at a time, node ${process.version}, load average ${os.loadavg()[0].toFixed(1)}`);
  console.log(
    `large body: HTML ${sample.html!.length} + text ${sample.text!.length} characters; small: HTML ${small.html!.length} + text ${small.text!.length}`,
  );
  console.log("CPU µs is the process's user + system time: steadier than wall time when other work shares the machine.\n");
  const figures = await buildFigures();
  console.log('| path | body | message bytes | wall µs / message | CPU µs / message | p99 wall µs |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const f of figures)
    console.log(`| ${f.label} | ${f.size} | ${f.bytes} | ${f.perMessageUs.toFixed(1)} | ${f.cpuUs.toFixed(1)} | ${f.p99Us.toFixed(1)} |`);
  console.log('\nworker_threads for signing:');
  for (const line of await workerFigures()) console.log('  ' + line);
}

void main();
