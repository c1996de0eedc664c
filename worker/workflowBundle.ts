import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { bundleWorkflowCode } from '@temporalio/worker';

const BUNDLE_PREFIX = 'mailroom-workflows-';
const BUNDLE_NAME = /^mailroom-workflows-\d+-[0-9a-f]{8}\.js$/;

/**
 * Removes the bundles workflowBundleFile() made for workers that died before disposing of them
 * (killed while starting), once `olderThanMs` old: a bundle lives for the seconds its worker
 * takes to read it. Answers how many went.
 */
export function removeAbandonedWorkflowBundles(olderThanMs: number, dir = os.tmpdir()): number {
  const cutoff = Date.now() - olderThanMs;
  let removed = 0;
  for (const name of fs.readdirSync(dir)) {
    if (!BUNDLE_NAME.test(name)) continue;
    const file = path.join(dir, name);
    try {
      if (fs.statSync(file).mtimeMs >= cutoff) continue;
      fs.rmSync(file, { force: true });
      removed++;
    } catch {
      // Gone meanwhile, or another user's file: not ours to remove.
    }
  }
  return removed;
}

/**
 * The workflow code the worker runs: the file MAILROOM_WORKFLOW_BUNDLE names (built ahead, e.g.
 * in an image, or once for a whole test run), else a bundle built now by a child process.
 * Bundling in the worker itself leaves webpack's code and sources in its heap for good, so the
 * worker would start with markedly more resident memory (the figures: docs/configuration.md,
 * "Processes, shutdown and performance", MAILROOM_WORKFLOW_BUNDLE). `dispose` removes a bundle
 * made here once the workers have read it.
 */
export async function workflowBundleFile(): Promise<{ codePath: string; dispose(): void }> {
  const given = process.env.MAILROOM_WORKFLOW_BUNDLE;
  if (given) return { codePath: given, dispose: () => undefined };
  const codePath = path.join(os.tmpdir(), `${BUNDLE_PREFIX}${process.pid}-${crypto.randomBytes(4).toString('hex')}.js`);
  const script = path.join(__dirname, `bundleWorkflows${path.extname(__filename)}`);
  // The same runtime flags as this process: from dist/ (`npm start`, the image) it bundles the
  // compiled workflows; from the sources (tests, benchmarks' BENCH_FROM_SOURCES) TypeScript needs tsx.
  const loader = path.extname(__filename) === '.ts' && !process.execArgv.some((arg) => arg.includes('tsx')) ? ['--import', 'tsx'] : [];
  await promisify(execFile)(process.execPath, [...process.execArgv, ...loader, script, codePath], { maxBuffer: 16 * 1024 * 1024 });
  return { codePath, dispose: () => fs.rmSync(codePath, { force: true }) };
}

const workflowsPath = require.resolve('../workflows');
const workflowInterceptorsPath = require.resolve('../workflows/interceptors');
const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };

/** Bundles the workflow code (webpack). Tests bundle once per run and hand the file to every worker they create. */
export async function buildWorkflowBundle(): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [workflowInterceptorsPath], logger: quietBundlerLogger });
}
