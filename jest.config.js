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
  // A jest worker exits once its event loop drains; on this 2-core machine under a full run that took
  // 100-500 ms and more (measured at jest-worker's end()), so jest's 500 ms default force-killed a worker
  // with nothing left open and printed "failed to exit gracefully" at the end of every run. A leak would
  // still show: the worker would wait out these 3 s.
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
