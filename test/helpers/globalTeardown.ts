import { rm } from 'node:fs/promises';

type Stoppable = { stop(): Promise<void> };

export default async function globalTeardown(): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  await (g.__svcS3 as Stoppable | undefined)?.stop();
  await (g.__svcPostgres as Stoppable | undefined)?.stop();
  if (process.env.SVC_TEST_SCRATCH) await rm(process.env.SVC_TEST_SCRATCH, { recursive: true, force: true });
}
