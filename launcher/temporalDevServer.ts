/**
 * Runs `temporal server start-dev` (the Temporal CLI's single-process server): used by
 * `npm start` when TEMPORAL_ADDRESS is unset, and by the test setup for a throwaway,
 * in-memory, headless server. Nothing here knows about either caller.
 */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { findFreePort } from '../lib/freePort';
import { devServerSearchAttributeArgs, mailroomSearchAttributes } from '../temporal/searchAttributes';
import { exitOf, hasExited, stopChildProcess } from './childProcess';
import type { ProcessExit } from './childProcess';

export interface TemporalDevServerOptions {
  /** The `temporal` CLI binary (see scripts/temporal-binary.cjs). */
  binaryPath: string;
  /** SQLite file for persistent state; omitted = in memory, lost when the server stops. */
  dbFilename?: string;
  /** Address the frontend (and UI) bind to. Default 127.0.0.1. */
  ip?: string;
  /** Frontend gRPC port; 0 or omitted = a free port. */
  port?: number;
  /** Web UI port (0 = a free port); false or omitted = no UI (--headless). */
  uiPort?: number | false;
  /** Namespace to create at start (and wait for). */
  namespace: string;
  /**
   * Register Mailroom's search attributes at start (default true). False gives a server as a
   * fresh self-hosted cluster is: Mailroom must register them itself.
   */
  searchAttributes?: boolean;
  /** Where the server's stdout/stderr go (appended); omitted = discarded (the tail is kept for errors). */
  logFile?: string;
  /**
   * Run the server in its own process group, so a Ctrl-C in the terminal reaches only the
   * caller, which stops it when it chooses (after the workers using it). The caller must then
   * stop it (a normal process exit does; a SIGKILL of the caller leaves it running).
   * Default false: the server gets the terminal's signals like any child.
   */
  detached?: boolean;
}

export interface TemporalDevServer {
  /** `host:port` of the frontend, for TEMPORAL_ADDRESS / Connection.connect. */
  address: string;
  /** The Web UI, unless headless. */
  uiUrl?: string;
  /** The server's process id. */
  pid: number;
  /** Resolves once the server has exited, whether stop() asked it to or not. */
  exited: Promise<ProcessExit>;
  /** The server's last output (from this start on), for error messages. */
  outputTail: () => string;
  /** SIGTERM, wait for exit (SIGKILL after 10 s); safe to call more than once. */
  stop: () => Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
const OUTPUT_TAIL_CHARS = 4000;
/**
 * The first characters of a start's output are kept too: a server that cannot bind a port logs
 * why in its first line, then panics with a stack longer than the tail.
 */
const OUTPUT_HEAD_CHARS = 2000;
const START_ATTEMPTS = 3;
/** How long one readiness probe's calls may take before the probe counts as not ready yet. */
const PROBE_DEADLINE_MS = 5000;

/** Servers started here and still running; signalled if this process exits without stopping them. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function trackForExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const proc of running) proc.kill('SIGTERM');
  });
}

function stopChild(child: ChildProcess): Promise<boolean> {
  return stopChildProcess(child, { graceMs: STOP_GRACE_MS });
}

/** A host usable to connect to a server bound to `ip` (wildcards mean loopback). */
function connectHost(ip: string): string {
  if (ip === '0.0.0.0') return '127.0.0.1';
  if (ip === '::' || ip === '[::]') return '[::1]';
  return ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip;
}

/** The client-side settings the CLI would otherwise pick up from the environment; the server needs none. */
function serverEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^TEMPORAL_(ADDRESS|NAMESPACE|API_KEY|TLS.*|PROFILE|ENV|CONFIG_FILE|GRPC_META_.*|CODEC_.*)$/.test(key)),
  );
}

class ServerExitedError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls until the frontend answers getSystemInfo, the namespace exists, and the `wanted` search
 * attributes are registered in it. Rejects early if the server process exits (or never ran).
 */
async function waitUntilReady(child: ChildProcess, address: string, namespace: string, wanted: string[], startOutput: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  let spawnError: Error | undefined;
  const gone = new Promise<'gone'>((resolve) => {
    child.once('exit', () => resolve('gone'));
    child.once('error', (err) => {
      spawnError = err;
      resolve('gone');
    });
    if (hasExited(child)) resolve('gone');
  });

  const probe = async (): Promise<'ready' | 'retry'> => {
    let connection: Connection | undefined;
    try {
      // No retry interceptor: this loop does the retrying.
      connection = await Connection.connect({ address, connectTimeout: 2000, interceptors: [] });
      const service = connection;
      // A deadline on the calls: something that takes the connection and never answers (not a
      // Temporal server, or one that hangs) would otherwise hold this probe, and its connection, for good.
      const { customAttributes } = await connection.withDeadline(Date.now() + PROBE_DEADLINE_MS, async () => {
        await service.workflowService.getSystemInfo({});
        await service.workflowService.describeNamespace({ namespace });
        return service.operatorService.listSearchAttributes({ namespace });
      });
      const missing = wanted.filter((name) => !customAttributes || !(name in customAttributes));
      if (missing.length === 0) return 'ready';
      lastError = new Error(`search attributes not registered yet: ${missing.join(', ')}`);
    } catch (err) {
      lastError = err;
    } finally {
      await connection?.close().catch(() => undefined);
    }
    return 'retry';
  };

  while (Date.now() < deadline) {
    // Racing the process exit makes a server that dies at startup fail fast, not after connectTimeout.
    const outcome = await Promise.race([probe(), gone]);
    if (outcome === 'ready') return;
    if (outcome === 'gone') {
      if (spawnError) throw new Error(`Could not run ${child.spawnfile}: ${spawnError.message}`);
      const output = startOutput();
      throw new ServerExitedError(
        `The Temporal dev server exited during startup (code ${child.exitCode ?? child.signalCode}).\n` + `Server output:\n${output.trimEnd() || '(none)'}`,
        output,
      );
    }
    await Promise.race([delay(250), gone]);
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new Error(
    `The Temporal dev server at ${address} was not ready (namespace ${namespace}) within ${READY_TIMEOUT_MS / 1000} s: ${reason}\n` +
      `Server output:\n${startOutput().trimEnd() || '(none)'}`,
  );
}

/** Up to `maxChars` of `file` from `fromOffset` on: its start (`'head'`) or its end (`'tail'`). */
function readFileSlice(file: string, fromOffset: number, maxChars: number, end: 'head' | 'tail'): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const start = end === 'tail' ? Math.max(fromOffset, size - maxChars) : fromOffset;
      const buffer = Buffer.alloc(Math.max(0, Math.min(maxChars, size - start)));
      fs.readSync(fd, buffer, 0, buffer.length, start);
      return buffer.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** The output's head and tail, joined with a marker where something between them was left out. */
function headAndTail(head: string, tail: string, total: number): string {
  if (total <= head.length + tail.length) return head + tail.slice(Math.max(0, head.length + tail.length - total));
  return `${head}\n[… ${total - head.length - tail.length} characters left out …]\n${tail}`;
}

/**
 * The ports the server could not bind (its log says `listen tcp 127.0.0.1:PORT: bind: address
 * already in use`). Besides the ports it is given, the dev server picks ports for its own history,
 * matching and worker services; another process can take one of those between its pick and its
 * bind, and the server then dies at startup (a nil-pointer panic after the log line).
 */
export function portsInUseAtStart(output: string): number[] {
  return [...output.matchAll(/listen tcp [^\s"]*:(\d+): bind: address already in use/g)].map((m) => Number(m[1]));
}

async function startOnce(opts: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ? opts.port : await findFreePort(ip === '0.0.0.0' ? undefined : ip);
  const uiPort = opts.uiPort === false || opts.uiPort === undefined ? undefined : opts.uiPort || (await findFreePort());

  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port)];
  args.push(...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]));
  if (opts.dbFilename) args.push('--db-filename', opts.dbFilename);
  args.push('--namespace', opts.namespace, '--log-format', 'json', '--log-level', 'warn');
  const withSearchAttributes = opts.searchAttributes ?? true;
  if (withSearchAttributes) args.push(...devServerSearchAttributeArgs());

  // Output goes straight to the log file (no pipe through us), or through a pipe that we
  // always drain, keeping only a tail for error messages.
  let logFd: number | undefined;
  let logStart = 0;
  let memoryTail = '';
  let memoryHead = '';
  let memoryTotal = 0;
  if (opts.logFile) {
    logFd = fs.openSync(opts.logFile, 'a');
    logStart = fs.fstatSync(logFd).size;
  }
  let child: ChildProcess;
  try {
    child = spawn(opts.binaryPath, args, {
      stdio: ['ignore', logFd ?? 'ignore', logFd ?? 'pipe'],
      env: serverEnv(),
      detached: opts.detached ?? false,
    });
  } finally {
    if (logFd !== undefined) fs.closeSync(logFd); // the child has its own copy
  }
  child.on('error', () => undefined); // startup reports spawn errors; a later failed kill must not crash us
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    if (memoryHead.length < OUTPUT_HEAD_CHARS) memoryHead = (memoryHead + text).slice(0, OUTPUT_HEAD_CHARS);
    memoryTotal += text.length;
    memoryTail = (memoryTail + text).slice(-OUTPUT_TAIL_CHARS);
  });
  const logFile = opts.logFile;
  const outputTail = () => (logFile ? readFileSlice(logFile, logStart, OUTPUT_TAIL_CHARS, 'tail') : memoryTail);
  /** What this start printed: its first and last lines, for the reason it died. */
  const startOutput = () => {
    if (!logFile) return headAndTail(memoryHead, memoryTail, memoryTotal);
    let size = logStart;
    try {
      size = fs.statSync(logFile).size;
    } catch {
      /* gone: what we can read is empty */
    }
    return headAndTail(readFileSlice(logFile, logStart, OUTPUT_HEAD_CHARS, 'head'), outputTail(), size - logStart);
  };
  trackForExit(child);
  const exited = exitOf(child);

  const address = `${connectHost(ip)}:${port}`;
  try {
    const wanted = withSearchAttributes ? mailroomSearchAttributes.map((key) => key.name) : [];
    await waitUntilReady(child, address, opts.namespace, wanted, startOutput);
  } catch (err) {
    await stopChild(child);
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${connectHost(ip)}:${uiPort}`,
    pid: child.pid!,
    exited,
    outputTail,
    stop: () => (stopping ??= stopChild(child).then(() => undefined)),
  };
}

/**
 * Starts `temporal server start-dev` and resolves once its frontend answers, `namespace`
 * exists and Mailroom's search attributes are registered. When the server dies during startup
 * because a port was taken between its pick and its bind (one picked here, or one the server
 * picks for its own services), it tries again, with new picks; a port the caller gave that is
 * in use fails at once.
 */
export async function startTemporalDevServer(opts: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const givenPorts = new Set([opts.port, opts.uiPort].filter((p): p is number => typeof p === 'number' && p > 0));
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      const taken = err instanceof ServerExitedError ? portsInUseAtStart(err.output) : [];
      const pickedPortTaken = taken.length > 0 && taken.every((port) => !givenPorts.has(port));
      if (!pickedPortTaken || attempt >= START_ATTEMPTS) throw err;
    }
  }
}

export { findFreePort };
