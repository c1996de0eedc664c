import path from 'node:path';
import { Piscina } from 'piscina';
import { buildMessage, type BuiltMessage } from './messageBuilder';
import type { OutgoingMail } from './outgoingMail';
import type { BuildOutcome } from './messageBuildThread';

/**
 * Where messages are built and DKIM-signed. Both are pure CPU (the RSA signature most of all),
 * and in a campaign the worker's main thread is what limits the rate, so
 * with `threads` > 0 the work runs on worker threads (piscina), on a core of its own. Messages
 * asked for in the same turn of the event loop (a delivery wave sends its emails at once) go to
 * a thread as one task: each hand-over costs a message round trip, and one per wave is cheap.
 */
export interface MessageBuilder {
  build(mail: OutgoingMail): Promise<BuiltMessage>;
  close(): Promise<void>;
}

/** V8 sizes a young generation as three semi-spaces: 2 MB ones. */
const BUILD_THREAD_YOUNG_GENERATION_MB = 6;

export function createMessageBuilder(threads: number): MessageBuilder {
  if (threads <= 0) {
    return {
      build: async (mail) => buildMessage(mail),
      close: async () => undefined,
    };
  }
  const pool = new Piscina<OutgoingMail[], BuildOutcome[]>({
    filename: threadEntry(),
    minThreads: threads,
    maxThreads: threads,
    // The thread's module is JavaScript under `npm start` and in the image (dist/), TypeScript
    // when this one is (tsx in scripts and benchmarks run from the sources, jest's transform in
    // tests, which threads do not inherit): it loads through tsx then.
    execArgv: threadExecArgv(),
    // The young generation the thread ran with until the worker's main thread was given V8's default
    // 16 MB semi-spaces (scripts/start.ts): this thread would grow to the same, ~15 MiB more resident
    // memory in a campaign. A --max-semi-space-size flag overrides it (V8 applies it to every thread).
    resourceLimits: { maxYoungGenerationSizeMb: BUILD_THREAD_YOUNG_GENERATION_MB },
  });
  let queued: Array<{ mail: OutgoingMail; resolve(message: BuiltMessage): void; reject(err: Error): void }> = [];
  const flush = () => {
    const batch = queued;
    queued = [];
    pool.run(batch.map((item) => item.mail)).then(
      (outcomes) => outcomes.forEach((outcome, i) => (outcome.ok ? batch[i].resolve(asBuffer(outcome.message)) : batch[i].reject(new Error(outcome.error)))),
      (err: unknown) => batch.forEach((item) => item.reject(err instanceof Error ? err : new Error(String(err)))),
    );
  };
  return {
    build(mail) {
      return new Promise((resolve, reject) => {
        if (!queued.length) setImmediate(flush);
        queued.push({ mail, resolve, reject });
      });
    },
    close: () => pool.destroy(),
  };
}

function threadEntry(): string {
  const extension = path.extname(__filename);
  return path.join(__dirname, `messageBuildThread${extension}`);
}

/**
 * The loaders this process runs with (tsx's, when it runs from the sources), which the thread needs to load
 * TypeScript; V8 and process flags (heap limits, profiling) are not allowed on a thread.
 */
function threadExecArgv(): string[] {
  const loaders: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    if (['--import', '--require', '-r', '--loader', '--experimental-loader'].includes(argv[i]) && i + 1 < argv.length) loaders.push(argv[i], argv[++i]);
    else if (/^--(import|require|loader|experimental-loader)=/.test(argv[i])) loaders.push(argv[i]);
  }
  if (path.extname(__filename) === '.ts' && !loaders.some((arg) => arg.includes('tsx'))) loaders.push('--import', 'tsx');
  return loaders;
}

/** A Buffer arrives from another thread as a plain Uint8Array over the same bytes. */
function asBuffer(message: BuiltMessage): BuiltMessage {
  const raw: Uint8Array = message.raw;
  return Buffer.isBuffer(raw) ? message : { ...message, raw: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength) };
}
