import fs from 'node:fs';
import path from 'node:path';

/**
 * Where a process's CPU went, by stage of sending, from the `.cpuprofile` files that
 * `node --cpu-prof` writes (one per thread). Each sample is put in the stage of the nearest frame on
 * its stack that belongs to a known stage: Node's own stream and socket code counts for whoever
 * called it (the SMTP client, the database driver).
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  startTime: number;
  endTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const STAGES: Array<[stage: string, test: (url: string, fn: string) => boolean]> = [
  ['idle', (_url, fn) => fn === '(idle)'],
  ['garbage collection', (_url, fn) => fn === '(garbage collector)'],
  ['RSA signature (DKIM)', (url, fn) => url === 'node:internal/crypto/sig' && (fn === 'sign' || fn === 'Sign')],
  [
    'MIME build and DKIM hashing',
    (url) => /mail\/mime\/|nodemailer\/dist\/cjs\/(mime-node|mail-composer|mime-funcs|qp|base64|dkim|addressparser|punycode|shared)/.test(url),
  ],
  ['SMTP hand-over', (url) => /nodemailer\/dist\/cjs\/(smtp-|mailer)|mail\/mailTransport|mail\/delivery\//.test(url)],
  [
    'render (template, text part, links)',
    (url) =>
      /mail\/rendering\/|mail\/links\/|templateVariables|emailComposer|node_modules\/(handlebars|html-to-text|htmlparser2|@selderee|selderee|domhandler|entities|mjml|deepmerge)/.test(
        url,
      ),
  ],
  ['database (pg, MikroORM, SQL)', (url) => /node_modules\/(pg|pg-protocol|pg-pool|@mikro-orm|knex)\/|\/db\//.test(url)],
  ['Temporal SDK', (url) => /node_modules\/@temporalio\//.test(url)],
  ['Mailroom services and activities', (url) => /\/(services|activities|worker)\//.test(url)],
];

/** The stage a frame belongs to by its own code, or null when it is its caller's. */
export function stageOfFrame(url: string, functionName: string): string | null {
  return STAGES.find(([, test]) => test(url, functionName))?.[0] ?? null;
}

/** `window`: the samples to count, in the profile's own clock (µs). */
export function profileStages(profile: CpuProfile, window?: { from: number; to: number }): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = stageOf.get(id);
    if (known) return known;
    const { url, functionName } = byId.get(id)!.callFrame;
    const own = stageOfFrame(url, functionName);
    const up = parent.get(id);
    const stage = own ?? (up === undefined ? 'other (Node internals, unattributed callbacks)' : resolve(up));
    stageOf.set(id, stage);
    return stage;
  };
  const micros = new Map<string, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window.from || at > window.to)) return;
    const stage = resolve(id);
    micros.set(stage, (micros.get(stage) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return micros;
}

/**
 * The stages of every thread of process `pid` profiled into `dir` (the worker's own bundling child
 * writes a profile there too), the main thread first, as µs per message.
 * Counted between `from` and `to` (epoch ms): the profile's clock is tied to the epoch by its
 * end, which is when the process exited (`exitedAt`), so start-up and shutdown stay out.
 */
export function printProfileStages(dir: string, pid: number, messages: number, span: { from: number; to: number; exitedAt: number }): void {
  // Node names the files CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main thread.
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile') && f.split('.')[3] === String(pid))
    .map((f) => ({ file: f, profile: JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as CpuProfile }));
  files.sort((a, b) => Number(a.file.split('.')[4]) - Number(b.file.split('.')[4]));
  for (const { file, profile } of files) {
    const offset = profile.endTime - span.exitedAt * 1000;
    const stages = profileStages(profile, { from: span.from * 1000 + offset, to: span.to * 1000 + offset });
    const busy = [...stages].filter(([s]) => s !== 'idle').reduce((sum, [, us]) => sum + us, 0);
    if (busy < 200_000) continue; // threads that only started (Temporal's workflow threads stay nearly idle)
    const thread = file.split('.')[4] === '0' ? 'main thread' : `thread ${file.split('.')[4]}`;
    console.log(`\n  worker ${thread}: ${(busy / 1e6).toFixed(1)} s busy, µs per message sent, by stage`);
    for (const [stage, us] of [...stages].sort((a, b) => b[1] - a[1])) {
      if (stage === 'idle') continue;
      console.log(`    ${stage.padEnd(48)} ${String(Math.round(us / messages)).padStart(6)}  (${((100 * us) / busy).toFixed(1)} %)`);
    }
    console.log(`    ${'total busy'.padEnd(48)} ${String(Math.round(busy / messages)).padStart(6)}`);
  }
}
