import { randomBytes } from 'node:crypto';

/** One logical call a client made, however many attempts it took. */
export type Call = {
  kind: 'text' | 'task' | 'message' | 'upload';
  /** Unique per call: its Idempotency-Key, also in its prompt, input or file name. */
  tag: string;
  statuses: number[];
  /** The status the client ended with (0: no answer at all, after every attempt). */
  final: number;
  body?: Record<string, unknown>;
};

export type LoadReport = {
  calls: Call[];
  /** Error answers that were not the API's JSON envelope (an HTML page, a bare text). */
  nonEnvelope: { status: number; text: string }[];
  /** Attempts that got no answer within the per-attempt timeout: which call, when it was sent. */
  hangs: { tag: string; sentAt: string }[];
  /** Attempts whose connection failed (refused, reset) before an answer. */
  networkErrors: number;
};

const retryable = new Set([409, 429, 500, 502, 503, 504]);
const attemptTimeoutMs = 30_000;
const maxAttempts = 8;

/**
 * A client as the API's guidance asks for: every creating POST carries an Idempotency-Key, and an
 * answer that says "retry" (429, 5xx, idempotency_request_in_progress) or no answer is retried with
 * the same key, after Retry-After when given, else with a growing backoff.
 */
async function callWithRetries(
  report: LoadReport,
  tag: string,
  send: (signal: AbortSignal) => Promise<Response>,
): Promise<{ statuses: number[]; final: number; body?: Record<string, unknown> }> {
  const statuses: number[] = [];
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    let res: Response;
    const sentAt = new Date().toISOString();
    try {
      res = await send(AbortSignal.timeout(attemptTimeoutMs));
    } catch (error) {
      if ((error as Error).name === 'TimeoutError') report.hangs.push({ tag, sentAt });
      else report.networkErrors++;
      statuses.push(0);
      await new Promise((r) => setTimeout(r, Math.min(2000, 200 * 2 ** attempt)));
      continue;
    }
    statuses.push(res.status);
    const text = await res.text();
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    if (res.status >= 400) {
      const code = (body?.error as { code?: unknown } | undefined)?.code;
      if (typeof code !== 'string' || !res.headers.get('content-type')?.includes('application/json')) {
        report.nonEnvelope.push({ status: res.status, text: text.slice(0, 200) });
      }
    }
    if (!retryable.has(res.status)) return { statuses, final: res.status, body };
    const after = Number(res.headers.get('retry-after'));
    const waitMs = Number.isFinite(after) && after > 0 ? after * 1000 : Math.min(2000, 200 * 2 ** attempt);
    await new Promise((r) => setTimeout(r, waitMs));
  }
  return { statuses, final: statuses.at(-1) ?? 0 };
}

export type LoadTarget = { origins: string[]; liveKey: string };

/**
 * Clients that each loop over live text calls, new tasks, messages to their tasks and small
 * uploads, spread over the web processes, until `stop()`; then the report of every call.
 */
export function startLoad(target: LoadTarget, clients: number, label: string) {
  const report: LoadReport = { calls: [], nonEnvelope: [], hangs: [], networkErrors: 0 };
  let running = true;
  let sequence = 0;
  const post =
    (origin: string, path: string, tag: string, body: string | FormData, json: boolean) =>
    (signal: AbortSignal) =>
      fetch(`${origin}/api/pub/v1${path}`, {
        method: 'POST',
        signal,
        body,
        headers: {
          authorization: `Bearer ${target.liveKey}`,
          'idempotency-key': tag,
          ...(json ? { 'content-type': 'application/json' } : {}),
        },
      });
  const client = async (n: number) => {
    const tasks: string[] = [];
    while (running) {
      const origin = target.origins[sequence % target.origins.length]!;
      const tag = `${label}-${n}-${sequence++}`;
      const pick = sequence % 10;
      let call: Call;
      if (pick < 5) {
        const prompt = `Load ${tag}`;
        const r = await callWithRetries(
          report,
          tag,
          post(origin, '/text', tag, JSON.stringify({ prompt }), true),
        );
        call = { kind: 'text', tag, ...r };
      } else if (pick < 6 || tasks.length === 0) {
        const input = `Task ${tag}`;
        const r = await callWithRetries(
          report,
          tag,
          post(origin, '/tasks', tag, JSON.stringify({ input }), true),
        );
        const id = (r.body?.task as { id?: string } | undefined)?.id;
        if (id) tasks.push(id);
        call = { kind: 'task', tag, ...r };
      } else if (pick < 8) {
        const input = `Message ${tag}`;
        const path = `/tasks/${tasks[sequence % tasks.length]}/messages`;
        const r = await callWithRetries(
          report,
          tag,
          post(origin, path, tag, JSON.stringify({ input }), true),
        );
        call = { kind: 'message', tag, ...r };
      } else {
        const filename = `${tag}.txt`;
        const form = () => {
          const data = new FormData();
          data.append(
            'file',
            new Blob([`${tag}\n${randomBytes(1500).toString('hex')}\n`], { type: 'text/plain' }),
            filename,
          );
          return data;
        };
        const r = await callWithRetries(report, tag, (signal) =>
          post(origin, '/files', tag, form(), false)(signal),
        );
        call = { kind: 'upload', tag, ...r };
      }
      report.calls.push(call);
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
  return {
    report,
    stop: async (): Promise<LoadReport> => {
      running = false;
      await done;
      return report;
    },
  };
}

/** How many calls ended with each final status, as `{ "201": 40, "202": 12 }`. */
export function byStatus(calls: Call[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const call of calls) counts[call.final] = (counts[call.final] ?? 0) + 1;
  return counts;
}
