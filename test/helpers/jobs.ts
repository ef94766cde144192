import { api, bearer, type TestContext } from './context.ts';

export type JobDto = {
  id: string;
  type: string;
  status: string;
  result: unknown;
  error: unknown;
  createdAt: string;
  completedAt: string | null;
};

/** Polls GET /jobs/{id} with `key` until the job has ended (up to `timeoutMs`). */
export async function waitForJob(t: TestContext, id: string, key: string, timeoutMs = 60_000): Promise<JobDto> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const res = await t.http
      .get(api(`/jobs/${id}`))
      .set(bearer(key))
      .expect(200);
    if (['succeeded', 'failed', 'cancelled'].includes(res.body.job.status)) return res.body.job as JobDto;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${id} did not finish`);
}
