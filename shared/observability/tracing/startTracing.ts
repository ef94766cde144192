import { register } from 'node:module';

import { configSecrets, isTracingRequested, loadConfig, tracesProtocol } from '../../config/config.ts';
import { tracesSamplerFromEnv } from '../../config/tracesSampler.ts';
// Type only: the SDK behind it is loaded below, and only when tracing is on.
import type { Tracing } from './installTracing.ts';

/** OTEL_NODE_ENABLED_INSTRUMENTATIONS as the Node auto-instrumentations read it; `pg` is the one we offer. */
function isEnabledInstrumentation(name: string, env: NodeJS.ProcessEnv): boolean {
  const list = env.OTEL_NODE_ENABLED_INSTRUMENTATIONS ?? '';
  return list.split(',').some((entry) => entry.trim() === name);
}

/**
 * What the exported spans must never carry. A config that does not parse stops the process right
 * after this (runPart reports it); tracing then has nothing to mask.
 */
function knownSecrets(): string[] {
  try {
    return configSecrets(loadConfig());
  } catch {
    return [];
  }
}

/**
 * Turns OpenTelemetry tracing on for this process when an OTLP endpoint is configured
 * (isTracingRequested), with `defaultServiceName` unless OTEL_SERVICE_NAME says otherwise. Entry
 * points call this first and import the rest of the platform dynamically afterwards, because the
 * opt-in pg instrumentation patches an ESM module only if its loader hook was registered before the
 * module was imported. Off, nothing is loaded or hooked: the @opentelemetry/api calls elsewhere then
 * find no span and cost next to nothing.
 */
export async function startTracing(
  defaultServiceName: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Tracing | undefined> {
  const protocol = tracesProtocol(env);
  const sampler = tracesSamplerFromEnv(env);
  // A protocol or sampler we do not offer: loadConfig, next, stops the process and says why.
  if (!isTracingRequested(env) || protocol === undefined || sampler === undefined) return undefined;
  const databaseQueries = isEnabledInstrumentation('pg', env);
  if (databaseQueries) {
    register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, {
      data: { include: ['pg', 'pg-pool'] },
    });
  }
  const { installTracing } = await import('./installTracing.ts');
  return installTracing(defaultServiceName, { secrets: knownSecrets(), databaseQueries, protocol, sampler });
}
