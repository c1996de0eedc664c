'use strict';
/**
 * jest's node environment, plus one duty at the end of each test file: a service process the file
 * started through test/support/processes.ts and left running (a test that failed before its
 * cleanup, a worker whose start timed out) is killed and waited for. Its open pipes would
 * otherwise keep jest's worker process alive, and jest would kill it ("A worker process has
 * failed to exit gracefully"). Runs after every afterAll of the file.
 */
const { TestEnvironment } = require('jest-environment-node');

const GRACE_MS = 5_000;

class MailroomTestEnvironment extends TestEnvironment {
  async teardown() {
    const children = this.global.__mailroomChildProcesses;
    if (children && children.size > 0) {
      const left = [...children];
      for (const child of left) child.kill('SIGKILL');
      await Promise.race([
        Promise.all(left.map((child) => (child.exitCode !== null || child.signalCode !== null ? null : new Promise((resolve) => child.once('exit', resolve))))),
        new Promise((resolve) => setTimeout(resolve, GRACE_MS).unref()),
      ]);
    }
    await super.teardown();
  }
}

module.exports = MailroomTestEnvironment;
