/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/src', '<rootDir>/packages/client/test', '<rootDir>/packages/react/test'],
  // Every spec file is matched, so a path on the command line runs that file: `npx jest test/usage.e2e-spec.ts`.
  // Loading the app's ~1500 modules costs a Jest test file ~2 s of CPU, so `npm test` runs the end-to-end specs
  // in groups (test/groups/*, one load per area): the filter leaves a spec that a matched group imports to that
  // group. test/spec-groups.spec.ts fails on an e2e spec that no group imports.
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts', '**/*.spec.ts', '**/*.spec.tsx'],
  filter: '<rootDir>/test/support/spec-groups.js',
  testSequencer: '<rootDir>/test/support/test-sequencer.js',
  transform: {
    '^.+\\.(t|j|mj)s$': ['@swc/jest'],
    // The React components' sources and specs (packages/react): TSX with React's automatic JSX runtime.
    '^.+\\.tsx$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript', tsx: true }, transform: { react: { runtime: 'automatic' } }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  // NestJS 12, jose 6, openid-client 6 (and its oauth4webapi) and oidc-provider 9 (the console's OpenID tests)
  // ship ES modules, which Jest on Node 20 cannot require: compile them to CommonJS too.
  // The client package's sources import each other as './x.js', as Node's ES modules need: here they are .ts.
  // The components' spec imports the client by its name: its sources, not its dist/ (which the strict-project
  // spec removes and builds again while other files run).
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1', '^@billing-licensing/client$': '<rootDir>/packages/client/src/index.ts' },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|jose|openid-client|oauth4webapi|oidc-provider)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  // Test files are I/O-bound (each has its own database, and the long-running group mostly waits): three
  // workers keep a 2-core machine busy.
  maxWorkers: 3,
};
