/** Tests run as native ES modules, transformed by swc (legacy decorators + metadata, like tsc). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          target: 'es2023',
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          keepClassNames: true,
        },
        module: { type: 'es6' },
      },
    ],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  setupFiles: ['<rootDir>/test/setup.ts'],
  globalSetup: '<rootDir>/test/global-setup.js',
  globalTeardown: '<rootDir>/test/global-teardown.js',
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  // Generous: the slowest tests without a bound of their own (a CLI run, a process started with tracing)
  // take 12–16 s alone on a quiet 2-core machine, and CI machines are shared and loaded.
  testTimeout: 60000,
  // Two workers, each replaced once it holds more than 1.5 GB after a file. With Jest's default on a
  // 2-core machine (one worker fewer than the cores) every file runs in the one Jest process, which keeps
  // each file's ES module graph: at 156 files it passed V8's 4 GB heap limit and aborted the run.
  maxWorkers: 2,
  workerIdleMemoryLimit: '1536MB',
};
