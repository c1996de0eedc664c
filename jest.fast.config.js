/**
 * The fast tier (`npm run test:fast`, docs/testing.md): the tests that need no PostgreSQL and no
 * shared Temporal dev server, workflow orchestration on TestWorkflowEnvironment with activity
 * stand-ins and unit tests of pure service rules. `npm test` (jest.config.js) runs them too.
 * `npm run test:fast` adds --coverage: it prints the coverage of workflows/ and fails under the
 * branch threshold.
 */
const base = require('./jest.config.js');

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test/fast'],
  testMatch: ['**/*.test.ts'],
  transform: base.transform,
  transformIgnorePatterns: base.transformIgnorePatterns,
  globalSetup: '<rootDir>/test/fast/support/fastGlobalSetup.ts',
  globalTeardown: '<rootDir>/test/fast/support/fastGlobalTeardown.ts',
  maxWorkers: 2,
  testTimeout: 30_000,
  // The workflow code runs in Temporal's sandbox from the setup's bundle, instrumented there
  // (@temporalio/nyc-test-coverage) and merged into each test file's coverage.
  collectCoverageFrom: ['workflows/**/*.ts'],
  coverageDirectory: '<rootDir>/coverage/fast',
  coverageReporters: ['text', 'text-summary'],
  coverageThreshold: { global: { branches: 90 } },
};
