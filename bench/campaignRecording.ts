/**
 * What recording a campaign's emails costs PostgreSQL and the worker's database client, per email:
 * the statement a campaign wave is recorded with (campaignWaveRepository.recordRound, driven by
 * services/campaigns/campaignWaves.ts: one per wave of 25, the previous wave's email.sent events
 * with it, and the round that lets the batch's claim go), over one connection, nothing sent, CPU
 * read from /proc for the backend (the server must be on this machine) and for this process.
 * Steadier than the end-to-end campaign bench, where the machine's other processes move the
 * figures by ±15 % from run to run.
 *
 *   node --import tsx bench/campaignRecording.ts [contacts=20000]      (or: npm run bench:recording)
 *
 * It runs two variants alternately, three times each, on a fresh campaign each time
 * (RECORDING_COMPARE):
 *   foreign-keys (default)  with the foreign keys of emails and events and without them (dropped in
 *                           the bench's own database, then put back): what their checks cost the
 *                           statement (issue 39, item 3)
 *   compression             the bodies' columns compressed with pglz and with lz4 (the migration's
 *                           choice where the server has it): what compressing a large body costs
 * BENCH_BODY_KB=28 gives every email a newsletter body of about that many KB of HTML (and a third
 * of it as text) instead of the end-to-end bench's short one; PostgreSQL compresses a row over ~2 KB.
 */
import crypto from 'node:crypto';
import { createOrm, type Orm } from '../db/orm';
import { runMigrations } from '../db/migrate';
import { ensureDatabase, dropDatabase } from '../launcher/embeddedPostgres';
import type { NewEmail } from '../db/emails/emailRepository';
import { campaignSendRepository } from '../db/campaigns/campaignSendRepository';
import { campaignAudienceSql } from '../db/campaigns/campaignAudience';
import { campaignWaveRepository, type HandOverOutcome, type WaveEmail } from '../db/campaigns/campaignWaveRepository';
import { CAMPAIGN_WAVE, campaignBatchKey } from '../services/campaigns/campaignBatchClaims';
import { newTimeOrderedId } from '../lib/ids/timeOrderedId';
import { processCpuMs } from './support/processCpu';

const BATCH = 500;

/** Runs `work` and answers the backend's and this process's CPU it took, in µs per email. */
async function measured(orm: Orm, pid: number, emails: number, work: () => Promise<void>): Promise<{ pg: number; client: number }> {
  await orm.em.fork().execute('select 1');
  const pg0 = processCpuMs(pid);
  const client0 = process.cpuUsage();
  await work();
  const client = process.cpuUsage(client0);
  return { pg: ((processCpuMs(pid) - pg0) * 1000) / emails, client: (client.user + client.system) / emails };
}

const BODY_KB = Number(process.env.BENCH_BODY_KB ?? 0);

/** About `kb` KB of newsletter HTML, each article with its own tracked link (as a recipient's copy has). */
function newsletterArticles(kb: number, token: string): { html: string; text: string } {
  const html: string[] = [];
  const text: string[] = [];
  for (let i = 0, size = 0; size < kb * 1024; i++) {
    const article =
      `<tr><td style="padding:16px 24px;font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:22px;color:#333333">` +
      `<h2 style="margin:0 0 8px;font-size:18px">Story ${i}: what changed this week</h2><p style="margin:0">Article ${i} tells what the team shipped, ` +
      `why it matters to readers on plan ${i % 3 ? 'pro' : 'free'}, and what comes next. ` +
      `<a href="https://mr.example.com/c/${token}${i.toString(36)}" style="color:#2563eb">Read story ${i}</a></p></td></tr>`;
    html.push(article);
    text.push(
      `STORY ${i}: WHAT CHANGED THIS WEEK\n\nArticle ${i} tells what the team shipped. Read story ${i} [https://mr.example.com/c/${token}${i.toString(36)}]\n`,
    );
    size += article.length;
  }
  return { html: `<table role="presentation" width="100%">${html.join('')}</table>`, text: text.join('\n') };
}

/** A campaign email as a batch composes it: the bench campaign's size (subject, HTML with footer and tracked links, text), or BODY_KB of newsletter. */
function campaignEmail(projectId: string, campaignId: string, contact: { id: string; email: string }): NewEmail {
  const token = crypto.randomBytes(32).toString('base64url');
  const articles = BODY_KB > 0 ? newsletterArticles(BODY_KB, token) : { html: '', text: '' };
  const html =
    `<html><body><h1>Hello Reader</h1>${articles.html}<p>Your plan: free. <a href="https://mr.example.com/c/${token}">Read the news</a> or ` +
    `<a href="https://mr.example.com/c/${token}x">see offers</a>.</p>` +
    `<p style="font-size:12px;color:#888">You receive this email because you subscribed. <a href="https://mr.example.com/u/${token}">Unsubscribe</a></p>` +
    `<img src="https://mr.example.com/o/${token}" width="1" height="1" alt=""></body></html>`;
  return {
    id: crypto.randomUUID(),
    projectId,
    contactId: contact.id,
    templateId: null,
    campaignId,
    workflowExecutionId: null,
    source: 'CAMPAIGN',
    type: 'MARKETING',
    subject: `News for ${contact.email}`,
    fromAddress: 'news@bench.example.com',
    fromName: null,
    replyTo: null,
    toAddress: contact.email,
    toName: null,
    html,
    text: `HELLO READER\n\n${articles.text}Your plan: free. Read the news [https://mr.example.com/c/${token}] or see offers [https://mr.example.com/c/${token}x].\n\nUnsubscribe [https://mr.example.com/u/${token}]`,
    headers: { 'List-Unsubscribe': `<https://mr.example.com/u/${token}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    attachmentSetId: null,
    status: 'QUEUED',
    messageId: `<${crypto.randomUUID()}@bench.example.com>`,
    deliveryWorkflowId: `campaign-${campaignId}`,
  };
}

async function main() {
  const contacts = Number(process.argv[2] ?? 20_000);
  const server = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const dbName = `mailroom_bench_${crypto.randomBytes(4).toString('hex')}`;
  const databaseUrl = await ensureDatabase(server, dbName);
  await runMigrations(databaseUrl);
  // One connection: every statement runs on the backend whose CPU is read.
  const orm = await createOrm(databaseUrl, { pool: { min: 1, max: 1 } });
  try {
    const em = orm.em.fork();
    const [{ pid }] = await em.execute(`select pg_backend_pid() as pid`);
    const [project] = await em.execute(
      `insert into projects (name, public_key, secret_key_hash, secret_key_hint) values ('bench', 'pk_bench', 'x', 'x') returning id`,
    );
    await em.execute(
      `insert into contacts (project_id, email, subscribed, data)
       select ?, 'reader' || g || '@bench.example', true, jsonb_build_object('firstName', 'Reader ' || g) from generate_series(1, ?) g`,
      [project.id, contacts],
    );
    const mode = process.env.RECORDING_COMPARE ?? 'foreign-keys';
    if (mode !== 'foreign-keys' && mode !== 'compression') throw new Error(`RECORDING_COMPARE: foreign-keys or compression, not ${mode}`);
    await compare(orm, pid, project.id, contacts, mode === 'compression' ? compressionComparison() : await foreignKeysComparison(orm));
  } finally {
    await orm.close();
    await dropDatabase(server, dbName);
  }
}

/** The foreign keys the wave's inserts check: every one of emails and events (contacts, projects, campaigns, emails …). */
async function foreignKeysOfEmailsAndEvents(orm: Orm): Promise<Array<{ table: string; name: string; definition: string }>> {
  return orm.em.fork().execute(
    `select conrelid::regclass::text as "table", conname as name, pg_get_constraintdef(oid) as definition
     from pg_constraint where contype = 'f' and conrelid in ('emails'::regclass, 'events'::regclass) order by 1, 2`,
  );
}

/**
 * One campaign to the whole audience recorded as a batch records it (campaignBatch.ts): per batch
 * of BATCH its claim taken (not measured), then one recordRound per wave of CAMPAIGN_WAVE with the
 * previous wave's hand-over (all SENT: their email.sent events), and the round that lets the claim go.
 */
async function recordCampaign(orm: Orm, pid: number, projectId: string, contacts: number): Promise<{ pg: number; client: number }> {
  const em = orm.em.fork();
  const [campaign] = await em.execute(
    `insert into campaigns (project_id, name, subject, body, from_address, audience_type, type, status)
     values (?, 'bench', 's', 'b', 'news@bench.example.com', 'ALL', 'MARKETING', 'SENDING') returning id`,
    [projectId],
  );
  const send = (await campaignSendRepository.find(orm.em.fork(), campaign.id))!;
  await campaignSendRepository.fixAudience(orm.em.fork(), send, await campaignAudienceSql(orm.em.fork(), send));
  await campaignWaveRepository.ensureCounter(orm.em.fork(), projectId);
  const attempt = `bench-${crypto.randomUUID()}`;
  const stamp = { date: 'Fri, 27 Nov 2026 05:11:08 +0000', boundary: `=_${crypto.randomUUID()}`, dkimSignature: `v=1; a=rsa-sha256; ${'b'.repeat(420)}` };
  const batches: Array<{ batchStart: string; waves: WaveEmail[][] }> = [];
  for (let after: string | null = null; ;) {
    const page = await campaignSendRepository.recipientsPage(orm.em.fork(), campaign.id, after, BATCH);
    if (!page.contacts.length) break;
    const batchStart = campaignBatchKey(after);
    await campaignWaveRepository.takeBatch(orm.em.fork(), campaign.id, batchStart, attempt);
    const waves: WaveEmail[][] = [];
    for (let i = 0; i < page.contacts.length; i += CAMPAIGN_WAVE) {
      // Time-ordered ids, as a batch gives its emails (their key index only appends).
      const wave = page.contacts.slice(i, i + CAMPAIGN_WAVE).map((c) => ({ ...campaignEmail(projectId, campaign.id, c), id: newTimeOrderedId() }));
      waves.push(wave.map((email) => ({ email, stamp, failure: null })));
    }
    batches.push({ batchStart, waves });
    after = page.lastContactId;
  }
  await em.execute('vacuum analyze');
  const refusals = { suppressed: 'suppressed', unsubscribed: 'unsubscribed' };
  return measured(orm, pid, contacts, async () => {
    for (const { batchStart, waves } of batches) {
      const round = { campaignId: campaign.id, projectId, batchStart, attempt, refusals };
      let handedOver: HandOverOutcome[] = [];
      for (const wave of waves) {
        const result = await campaignWaveRepository.recordRound(orm.em.fork(), { ...round, handedOver, wave, release: false });
        if (result.recorded.length !== wave.length) throw new Error(`recorded ${result.recorded.length} of ${wave.length}`);
        handedOver = result.recorded.map((r) => ({ emailId: r.id, status: 'SENT' as const, providerMessageId: null }));
      }
      await campaignWaveRepository.recordRound(orm.em.fork(), { ...round, handedOver, wave: [], release: true });
    }
  });
}

/** Two states of the bench's database the recording statement is compared in: `apply` enters the second, `undo` leaves it. */
interface Comparison {
  what: string;
  variants: [string, string];
  apply: (orm: Orm) => Promise<void>;
  undo: (orm: Orm) => Promise<void>;
  /** Enters the first state, where the migrations leave the database in the second. */
  prepare?: (orm: Orm) => Promise<void>;
}

async function foreignKeysComparison(orm: Orm): Promise<Comparison> {
  const keys = await foreignKeysOfEmailsAndEvents(orm);
  console.log(`Foreign keys of emails and events dropped for "without" and put back for "with":`);
  for (const key of keys) console.log(`- ${key.table}.${key.name}: ${key.definition}`);
  return {
    what: 'foreign keys',
    variants: ['with', 'without'],
    apply: async (o) => {
      for (const key of keys) await o.em.fork().execute(`alter table ${key.table} drop constraint "${key.name}"`);
    },
    undo: async (o) => {
      for (const key of keys) await o.em.fork().execute(`alter table ${key.table} add constraint "${key.name}" ${key.definition}`);
    },
  };
}

function compressionComparison(): Comparison {
  const compress = (method: string) => async (o: Orm) => {
    await o.em.fork().execute(`alter table emails alter column html set compression ${method}, alter column text set compression ${method}`);
  };
  console.log(`The bodies' columns (emails.html, emails.text) compressed with pglz, then with lz4.`);
  return { what: 'compression', variants: ['pglz', 'lz4'], apply: compress('lz4'), undo: compress('pglz'), prepare: compress('pglz') };
}

/** The recording statement in the comparison's two states, alternately, on the same database. */
async function compare(orm: Orm, pid: number, projectId: string, contacts: number, comparison: Comparison): Promise<void> {
  await comparison.prepare?.(orm);
  const [first, second] = comparison.variants;
  const sample = campaignEmail(projectId, crypto.randomUUID(), { id: crypto.randomUUID(), email: 'reader@bench.example' });
  console.log(
    `\nRecording a ${contacts.toLocaleString('en')}-contact campaign with campaignWaveRepository.recordRound, waves of ${CAMPAIGN_WAVE}, batches of ${BATCH}, ` +
      `bodies of ${((sample.html ?? '').length / 1024).toFixed(1)} KB HTML and ${((sample.text ?? '').length / 1024).toFixed(1)} KB text; ` +
      `CPU per email (PostgreSQL backend / this process), a fresh campaign each run\n`,
  );
  console.log(`| run | ${comparison.what} | PostgreSQL µs / email | client µs / email |`);
  console.log(`|---:|---|---:|---:|`);
  const runs = new Map<string, Array<{ pg: number; client: number }>>(comparison.variants.map((v) => [v, []]));
  const pairs = 3;
  let run = 0;
  for (let pair = 0; pair < pairs; pair++) {
    for (const variant of comparison.variants) {
      if (variant === second) await comparison.apply(orm);
      try {
        const cost = await recordCampaign(orm, pid, projectId, contacts);
        runs.get(variant)!.push(cost);
        console.log(`| ${++run} | ${variant} | ${cost.pg.toFixed(1)} | ${cost.client.toFixed(1)} |`);
      } finally {
        if (variant === second) await comparison.undo(orm);
      }
    }
  }
  const mean = (list: Array<{ pg: number; client: number }>) => ({
    pg: list.reduce((sum, c) => sum + c.pg, 0) / list.length,
    client: list.reduce((sum, c) => sum + c.client, 0) / list.length,
  });
  const a = mean(runs.get(first)!);
  const b = mean(runs.get(second)!);
  const share = (x: number, y: number) => `${(((x - y) / x) * 100).toFixed(1)} %`;
  console.log(`\n| mean of ${pairs} | PostgreSQL µs / email | client µs / email | both µs / email |`);
  console.log(`|---|---:|---:|---:|`);
  console.log(`| ${first} | ${a.pg.toFixed(1)} | ${a.client.toFixed(1)} | ${(a.pg + a.client).toFixed(1)} |`);
  console.log(`| ${second} | ${b.pg.toFixed(1)} | ${b.client.toFixed(1)} | ${(b.pg + b.client).toFixed(1)} |`);
  console.log(`| ${first} − ${second}, share of ${first} | ${share(a.pg, b.pg)} | ${share(a.client, b.client)} | ${share(a.pg + a.client, b.pg + b.client)} |`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
