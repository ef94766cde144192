/** How deliveries are retried and bounded. Workers use the default; tests inject short delays. */
export type WebhookPolicy = {
  /** Delay before attempt n + 2 after attempt n + 1 failed; its length + 1 is the number of attempts. */
  retryDelaysMs: readonly number[];
  /** Deadline of one attempt: connect, send and the response headers. */
  timeoutMs: number;
  /**
   * How long one job may go on with its endpoint's due deliveries after its own (see drainEndpoint):
   * long enough that a backlog goes at the receiver's pace, short enough that a job's span ends.
   */
  drainMs?: number;
  /** How long a job draining a busy endpoint waits for its next delivery before ending. */
  lingerMs?: number;
};

/**
 * The Standard Webhooks schedule: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h,
 * eight attempts over about 27.6 hours ("about a day", DESIGN.md).
 */
export const defaultWebhookPolicy: Required<WebhookPolicy> = Object.freeze({
  retryDelaysMs: Object.freeze([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]),
  timeoutMs: 15_000,
  drainMs: 30_000,
  lingerMs: 1_000,
});

/** Delay after failed attempt `attempt` (1-based), or null when it was the last one. */
export function retryDelayMs(policy: WebhookPolicy, attempt: number): number | null {
  return policy.retryDelaysMs[attempt - 1] ?? null;
}
