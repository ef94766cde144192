// ESM TypeScript under Node 24: sources are plain type-stripped TypeScript (as Node itself runs them),
// so the transform only strips types and keeps line numbers.
const common = {
  transform: { '^.+\\.ts$': '<rootDir>/test/helpers/stripTypesTransform.js' },
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testEnvironment: 'node',
  setupFilesAfterEnv: ['<rootDir>/test/helpers/processStreams.ts'],
};

export default {
  maxWorkers: 2,
  // Node keeps every ES module a vm context evaluated (nodejs/node#63186, jestjs/jest#14605), so a worker
  // holds each finished test file's module graph: about 25 MB a file here, 2 GB after eighty files,
  // which made GC slow and the final exit outlast jest's grace ("failed to exit gracefully"). A worker
  // past this much memory after a file is replaced by a fresh one. A worker's exit takes longer the more it
  // holds (0.1 s fresh, 0.7-1.3 s near the limit, measured at jest-worker's end()), past jest's 0.5 s.
  workerIdleMemoryLimit: '700MB',
  workerGracefulExitTimeout: 3_000,
  testTimeout: 60_000,
  globalSetup: '<rootDir>/test/helpers/globalSetup.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardown.ts',
  reporters: ['default', '<rootDir>/test/helpers/summaryReporter.js'],
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
  ],
};
