/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/src'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': ['@swc/jest'] },
  // NestJS 12 and jose 6 ship ES modules, which Jest on Node 20 cannot require: compile them to CommonJS too.
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|jose)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  // Test files are I/O-bound (each has its own database); two workers keep a 2-core machine busy.
  maxWorkers: 2,
};
