/**
 * The slowest test files and their seconds in a fresh-clone CI run (jest's per-file time, 2 workers),
 * longest first. A fresh clone has no jest timing cache, so without this table jest orders files by
 * size and a minute-long file can start last, leaving the other worker idle while it runs. Rough
 * figures are enough: only the order matters. Refresh from a CI log's `PASS … (N s)` lines when the
 * slow files change.
 */
export const slowTestFiles = new Map([
  ['test/integration/worker/webhooks.outage.test.ts', 72],
  ['test/integration/e2e/faults.postgresRestart.test.ts', 65],
  ['test/integration/console/console.visual.test.ts', 62],
  ['test/integration/api/generation.providerHealth.test.ts', 56],
  ['test/integration/api/ocr.limits.test.ts', 43],
  ['test/integration/console/console.keysRoundThree.test.ts', 37],
  ['test/integration/e2e/prometheus.fleet.test.ts', 35],
  ['test/integration/e2e/npmStart.stopping.test.ts', 33],
  ['test/integration/worker/liveness.crash.test.ts', 32],
  ['test/integration/worker/webhooks.isolation.test.ts', 29],
  ['test/integration/e2e/scaleOut.test.ts', 27],
  ['test/integration/console/console.browser.test.ts', 27],
  ['test/integration/e2e/tracing.secrets.test.ts', 26],
  ['test/integration/api/generation.textStreamBackpressure.test.ts', 26],
  ['test/integration/e2e/tokenLimits.fleet.test.ts', 26],
  ['test/integration/api/files.storageOutage.test.ts', 25],
  ['test/integration/worker/documents.isolation.test.ts', 24],
  ['test/integration/e2e/breakerFleet.test.ts', 24],
  ['test/integration/worker/jobs.deferredFinish.test.ts', 23],
  ['test/integration/api/idempotency.work.test.ts', 23],
  ['test/integration/api/generation.openai.test.ts', 21],
  ['test/integration/e2e/npmStart.test.ts', 20],
  ['test/integration/e2e/procfile.stopping.test.ts', 19],
  ['test/integration/e2e/tracing.test.ts', 18],
  ['test/integration/api/files.presigned.test.ts', 17],
  ['test/integration/console/console.webhookRotation.test.ts', 17],
  ['test/integration/worker/brain.synthesize.openai.test.ts', 16],
  ['test/integration/e2e/tracing.context.test.ts', 15],
  ['test/integration/api/transcriptions.abortedUpload.test.ts', 15],
  ['test/integration/worker/brain.synthesize.test.ts', 15],
  ['test/integration/api/tasks.streamBackpressure.test.ts', 15],
  ['test/integration/worker/generation.crash.test.ts', 14],
]);
