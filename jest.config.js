/** @type {import('jest').Config} */
module.exports = {
  // jest's node environment, which also stops service processes a test file left running.
  testEnvironment: '<rootDir>/test/support/testEnvironment.cjs',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
    // Packages that ship ES modules only: Node requires them natively (require(esm)), jest's registry does not.
    '/node_modules/email-reply-parser/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!email-reply-parser/)'],
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  // Two cores: one test file per core; each file gets its own database and task queue.
  maxWorkers: 2,
  // A worker keeps about 100 MB more heap after each file (the files' module registries are not all
  // collected) and reached 1 GB by the end of a run; freeing that at exit took longer than jest's
  // 500 ms, so jest killed it ("failed to exit gracefully"). A worker above 500 MB after a file is
  // replaced by a fresh one (docs/testing.md).
  workerIdleMemoryLimit: '500MB',
  testTimeout: 60_000,
};
