/**
 * The fast tier's one shared preparation (jest.fast.config.js): the workflow bundle, built once
 * for every test file, instrumented for coverage when jest collects it (--coverage: the workflow
 * code runs in Temporal's sandbox from this bundle, where jest's own instrumentation never looks).
 * No PostgreSQL and no shared Temporal server: each test file starts its own TestWorkflowEnvironment.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions } from '@temporalio/worker';
import { WorkflowCoverage } from '@temporalio/nyc-test-coverage';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalBinary } = require('../../../scripts/temporal-binary.cjs');

export const FAST_BUNDLE_ENV = 'MAILROOM_FAST_WORKFLOW_BUNDLE';
export const FAST_COVERAGE_ENV = 'MAILROOM_FAST_WORKFLOW_COVERAGE';

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };

/** The bundle options of the worker's own bundle (worker/workflowBundle.ts): the same modules. */
export function workflowBundleOptions(): BundleOptions {
  return {
    workflowsPath: require.resolve('../../../workflows'),
    workflowInterceptorModules: [require.resolve('../../../workflows/interceptors')],
    logger: quietBundlerLogger,
  };
}

export default async function fastGlobalSetup(globalConfig: { collectCoverage: boolean }): Promise<void> {
  // Built on first use (minutes); afterwards a look at the file.
  ensureTemporalBinary();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-fast-'));
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  if (globalConfig.collectCoverage) {
    // WorkflowCoverage instruments only while an Istanbul coverage object exists (as in a test file under --coverage).
    const holder = globalThis as { __coverage__?: unknown };
    holder.__coverage__ = {};
    try {
      fs.writeFileSync(bundlePath, (await bundleWorkflowCode(new WorkflowCoverage().augmentBundleOptions(workflowBundleOptions()))).code);
    } finally {
      delete holder.__coverage__;
    }
    process.env[FAST_COVERAGE_ENV] = '1';
  } else {
    fs.writeFileSync(bundlePath, (await bundleWorkflowCode(workflowBundleOptions())).code);
  }
  process.env[FAST_BUNDLE_ENV] = bundlePath;
  (globalThis as { __mailroomFastDir?: string }).__mailroomFastDir = dir;
}
