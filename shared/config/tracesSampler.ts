import { z } from 'zod';

const samplerNames = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const;

/**
 * OTEL_TRACES_SAMPLER: the specification's names this platform offers. The SDK would take a typo
 * for its default, parent-based always-on, and export every call: refused at start instead.
 */
export const tracesSamplerName = z
  .enum(samplerNames, { message: `must be one of ${samplerNames.join(', ')}` })
  .optional();

/** OTEL_TRACES_SAMPLER_ARG: the share of traces the ratio samplers keep (blank counts as unset). */
export const tracesSamplerArg = z.preprocess(
  (raw) => (typeof raw === 'string' && raw.trim() === '' ? undefined : raw),
  z.coerce
    .number({ message: 'must be a number from 0 to 1' })
    .min(0, { message: 'must be a number from 0 to 1' })
    .max(1, { message: 'must be a number from 0 to 1' })
    .optional(),
);

/**
 * TRACE_SAMPLING_WINDOW_MS: with parentbased_traceidratio, the api samples the calls that start a
 * trace in windows this long (the ratio's share of the time) rather than one by one.
 */
const windowMessage = { message: 'must be a whole number of milliseconds from 1 to 60000' };
export const traceSamplingWindowMs = z.coerce
  .number(windowMessage)
  .int(windowMessage)
  .min(1, windowMessage)
  .max(60_000, windowMessage)
  .optional();

/** Why TRACE_SAMPLING_WINDOW_MS cannot go with `name` (only the parent-based ratio takes a window), if so. */
export function windowRefusal(name: TracesSampler['name'] | undefined, windowMs: number | undefined) {
  if (windowMs === undefined || name === 'parentbased_traceidratio') return undefined;
  return `applies only with OTEL_TRACES_SAMPLER=parentbased_traceidratio (it is ${name ?? 'unset'})`;
}

export type TracesSampler = {
  name: (typeof samplerNames)[number];
  /** The ratio samplers' share (1 where the variable is unset, as the specification says). */
  ratio: number;
  /** TRACE_SAMPLING_WINDOW_MS: the api's root decisions per window of this many ms, not per call. */
  windowMs?: number;
};

/** The configured sampler, parent-based always-on where none is named (the SDK's default too). */
export function tracesSampler(
  name: TracesSampler['name'] | undefined,
  arg: number | undefined,
  windowMs?: number,
): TracesSampler {
  const sampler: TracesSampler = { name: name ?? 'parentbased_always_on', ratio: arg ?? 1 };
  if (windowMs !== undefined) sampler.windowMs = windowMs;
  return sampler;
}

/** Both variables from `env`, or undefined where loadConfig refuses one of them. */
export function tracesSamplerFromEnv(env: NodeJS.ProcessEnv): TracesSampler | undefined {
  const name = tracesSamplerName.safeParse(env.OTEL_TRACES_SAMPLER);
  const arg = tracesSamplerArg.safeParse(env.OTEL_TRACES_SAMPLER_ARG);
  return name.success && arg.success ? tracesSampler(name.data, arg.data) : undefined;
}

/**
 * The share of calls sampled where the api starts a trace itself, for a parent-based sampler (the
 * root's decision); undefined for the others, which judge every span by its trace id and are left
 * to the SDK whole.
 */
export function edgeShare(sampler: TracesSampler): number | undefined {
  switch (sampler.name) {
    case 'parentbased_always_on':
      return 1;
    case 'parentbased_always_off':
      return 0;
    case 'parentbased_traceidratio':
      return sampler.ratio;
    default:
      return undefined;
  }
}
