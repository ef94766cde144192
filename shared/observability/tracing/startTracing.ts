import { register } from 'node:module';

import { isTracingRequested } from '../../config/config.ts';
// Type only: the SDK behind it is loaded below, and only when tracing is on.
import type { Tracing } from './installTracing.ts';

/**
 * The modules the instrumentations patch that are imported from ESM: import-in-the-middle wraps
 * only these (wrapping every module would also parse each of our TypeScript files at load time).
 * Modules they load with require() are patched by require-in-the-middle without this list.
 */
const hookedModules = ['http', 'https', 'pg', 'pg-pool', 'express'];

/**
 * Turns OpenTelemetry tracing on for this process when an OTLP endpoint is configured
 * (isTracingRequested), with `defaultServiceName` unless OTEL_SERVICE_NAME says otherwise. An ESM
 * module is patched only if the loader hook was registered before it was imported, so entry points
 * call this first and import the rest of the platform dynamically afterwards. Off, nothing is loaded
 * or hooked: the @opentelemetry/api calls elsewhere then find no span and cost next to nothing.
 */
export async function startTracing(defaultServiceName: string): Promise<Tracing | undefined> {
  if (!isTracingRequested()) return undefined;
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: hookedModules } });
  const { installTracing } = await import('./installTracing.ts');
  return installTracing(defaultServiceName);
}
