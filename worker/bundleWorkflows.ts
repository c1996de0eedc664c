/**
 * Writes the workflow bundle to the file named by the first argument. Run by the worker as a
 * child process (workflowBundle.ts), so that webpack never loads into the worker itself.
 */
import fs from 'node:fs';
import { buildWorkflowBundle } from './workflowBundle';

const out = process.argv[2];
if (!out) throw new Error('usage: bundleWorkflows.ts <output file>');
buildWorkflowBundle().then(
  (bundle) => fs.writeFileSync(out, bundle.code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
