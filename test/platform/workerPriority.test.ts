import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * WORKER_NICE: the worker lowers its CPU priority (every thread it has, and the threads it starts
 * later inherit it), so that on shared cores the API's requests come first. Run in a child process:
 * niceness cannot be raised back without privileges.
 */
const root = path.resolve(__dirname, '../..');

function nicenessAfter(nice: number): number[] {
  const script = `
    const { lowerWorkerPriority } = require('./worker/processPriority.ts');
    const { Worker } = require('node:worker_threads');
    const fs = require('node:fs');
    lowerWorkerPriority(${nice}, { warn(obj) { console.error(obj); } });
    const thread = new Worker('setTimeout(() => {}, 500)', { eval: true });
    thread.once('online', () => {
      const values = fs.readdirSync('/proc/self/task').map((tid) => {
        const stat = fs.readFileSync('/proc/self/task/' + tid + '/stat', 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      });
      console.log(JSON.stringify(values));
      process.exit(0);
    });`;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: root, encoding: 'utf8' }).trim());
}

// Reads each thread's niceness from /proc: Linux, like every machine this project runs and tests on.
it('lowers every thread of the worker to WORKER_NICE, threads started later included', () => {
  const values = nicenessAfter(10);
  expect(values.length).toBeGreaterThan(2);
  expect(new Set(values)).toEqual(new Set([10]));
});

it('leaves the priority alone with WORKER_NICE=0', () => {
  expect(new Set(nicenessAfter(0))).toEqual(new Set([0]));
});
