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
