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
  testTimeout: 60_000,
};
