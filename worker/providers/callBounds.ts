import { ProviderError } from '../../shared/providers/types.ts';

/**
 * What ended a provider call before its answer did: no first byte in time (`firstByte`), a silence
 * mid-answer as long as the first-byte deadline (`silence`), or the deadline over the whole answer
 * while it was still flowing (`deadline`). The first two are the provider's doing; the last is the
 * caller's length (docs/providers.md, "What counts against a provider").
 */
export type Cut = 'firstByte' | 'silence' | 'deadline';

export type CallLimits = {
  /** The deadline over the whole call. */
  timeoutMs: number;
  /**
   * The longest the provider may stay silent: before its first byte, and between two parts of a
   * streamed answer (a stall). Absent: only the whole-call deadline bounds it (non-streamed calls).
   */
  firstByteTimeoutMs?: number;
};

export type CallBounds = {
  /** The job's signal: its abort is a cancellation, never the provider's failure. */
  signal: AbortSignal;
  /** Aborted when either of the call's own deadlines cut it. */
  deadline: AbortSignal;
  /** The job's signal and the call's deadlines: what the request runs under. */
  combined: AbortSignal;
  /** Which deadline cut the call, if one did. */
  cut(): Cut | undefined;
  /** Something arrived from the provider: its first byte, or the stream is still flowing. */
  heard(): void;
  /** The call is over: its timers go. */
  end(): void;
};

/**
 * The bounds one provider call runs under: the job's signal, the deadline over the whole call, and
 * (streamed calls) the first-byte deadline, re-armed by every part of the answer. The SDKs' own
 * timeouts bound a streamed answer only until its headers arrive, and a stream cut by its signal may
 * end as if it had finished: readers ask `cut()` once the stream ends.
 */
export function callBounds(signal: AbortSignal, limits: CallLimits): CallBounds {
  const cutter = new AbortController();
  let by: Cut | undefined;
  let heardAny = false;
  const stop = (cut: Cut) => {
    if (by !== undefined) return;
    // A provider that never sent a byte did not answer, whichever deadline came first.
    by = heardAny ? cut : 'firstByte';
    cutter.abort(new Error(`provider call cut (${by})`));
  };
  const whole = setTimeout(() => stop('deadline'), limits.timeoutMs);
  // A streamed answer re-arms the silence deadline with every part: it only notes the time, and the
  // one timer, when it fires, waits out what is left since the last part. A new timer per part cost
  // the gateway a tenth of its CPU per call under load.
  const silenceMs = limits.firstByteTimeoutMs;
  let lastHeard = performance.now();
  let quiet: NodeJS.Timeout | undefined;
  const watch = () => {
    if (by !== undefined || silenceMs === undefined) return;
    const left = silenceMs - (performance.now() - lastHeard);
    if (left <= 0) stop('silence');
    else quiet = setTimeout(watch, left);
  };
  if (silenceMs !== undefined) quiet = setTimeout(watch, silenceMs);
  // The job's abort or a deadline's, whichever comes first. Not AbortSignal.any, whose composite
  // signals Node tracks with weak references: a tenth of the gateway's CPU per call under load.
  const combiner = new AbortController();
  const onJobAbort = () => combiner.abort(signal.reason);
  if (signal.aborted) onJobAbort();
  else signal.addEventListener('abort', onJobAbort, { once: true });
  cutter.signal.addEventListener('abort', () => combiner.abort(cutter.signal.reason), { once: true });
  return {
    signal,
    deadline: cutter.signal,
    combined: combiner.signal,
    cut: () => by,
    heard() {
      heardAny = true;
      lastHeard = performance.now();
    },
    end() {
      clearTimeout(whole);
      clearTimeout(quiet);
      signal.removeEventListener('abort', onJobAbort);
    },
  };
}

/**
 * What a call its own bounds cut means: nothing (`false`) when none did; `true` when the whole-answer
 * deadline ended an answer still flowing, which then ends with what arrived (the caller's length,
 * billed, not the provider's failure); a retryable ProviderError, counted against the provider, when
 * it sent no first byte in time or fell silent mid-answer.
 * @throws ProviderError for the provider's cuts.
 */
export function answerCut(cut: Cut | undefined, limits: CallLimits, what: string): boolean {
  if (cut === undefined) return false;
  if (cut === 'deadline') return true;
  const ms = limits.firstByteTimeoutMs ?? limits.timeoutMs;
  const how = cut === 'firstByte' ? 'without a first byte' : 'of silence mid-answer';
  throw new ProviderError(`${what} timed out after ${ms} ms ${how}`, true);
}
