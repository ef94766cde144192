import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { z } from 'zod';

import type { DatabasePooler } from '../db/pool.ts';
import { parsePrices, type Prices } from './prices.ts';
import {
  parseProvidersConfig,
  type ProvidersConfig,
  routedCapabilities,
  type RoutedCapability,
  type SingleProviderSettings,
} from './providersConfig.ts';
import { reservationPrices } from './routePrices.ts';
import {
  traceSamplingWindowMs,
  type TracesSampler,
  tracesSampler,
  tracesSamplerArg,
  tracesSamplerName,
  windowRefusal,
} from './tracesSampler.ts';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** What Express's `trust proxy` setting takes. */
export type TrustProxy = boolean | number | string[];

// proxy-addr's (Express's) names for address ranges.
const trustedRangeNames = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** A contiguous IPv4 netmask (255.255.255.0), which proxy-addr accepts in place of a prefix length. */
function isIpv4Netmask(mask: string): boolean {
  if (!net.isIPv4(mask)) return false;
  const bits = mask.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
  const inverted = ~bits >>> 0;
  return (inverted & (inverted + 1)) === 0;
}

/** One entry of an address list: a range name, an address, or an address with a prefix or netmask. */
function isTrustEntry(entry: string): boolean {
  if (trustedRangeNames.has(entry)) return true;
  const [address = '', range, extra] = entry.split('/');
  const family = net.isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (range === undefined) return true;
  if (/^\d{1,3}$/.test(range)) return Number(range) <= (family === 6 ? 128 : 32);
  return family === 4 && isIpv4Netmask(range);
}

/**
 * TRUST_PROXY as Express takes it: `true`/`false`, a hop count (`1` behind one router), or a
 * comma-separated list of trusted proxy addresses, CIDR ranges and the names loopback, linklocal,
 * uniquelocal. Invalid entries fail at boot, not on the first request.
 */
const trustProxy = z.string().transform((raw, ctx): TrustProxy => {
  const value = raw.trim();
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  const invalid = entries.filter((entry) => !isTrustEntry(entry));
  if (invalid.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `not true, false, a hop count or a list of addresses, CIDR ranges, loopback, linklocal or uniquelocal (bad: ${invalid.map((e) => JSON.stringify(e)).join(', ')})`,
    });
    return z.NEVER;
  }
  return entries;
});

const otlpProtocol = z
  .enum(['http/protobuf', 'http/json'], {
    message: 'must be http/protobuf or http/json (spans go over OTLP/HTTP; gRPC is not offered)',
  })
  .optional();
export type OtlpProtocol = NonNullable<z.infer<typeof otlpProtocol>>;

/** Whose W3C trace context the api continues (TRACE_CONTEXT_TRUST): nobody's, everyone's, or these peers'. */
export type TraceContextTrust = 'none' | 'all' | string[];

/**
 * TRACE_CONTEXT_TRUST: `none` (a caller's traceparent is only linked), `all`, or a comma-separated
 * list of addresses, CIDR ranges and loopback, linklocal, uniquelocal (the operator's own proxies,
 * judged by the connection's peer address, never by X-Forwarded-For).
 */
const traceContextTrust = z.string().transform((raw, ctx): TraceContextTrust => {
  const value = raw.trim();
  if (value === 'none' || value === 'all') return value;
  const entries = value.split(',').map((entry) => entry.trim());
  const invalid = entries.filter((entry) => !isTrustEntry(entry));
  if (invalid.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `not none, all or a list of addresses, CIDR ranges, loopback, linklocal or uniquelocal (bad: ${invalid.map((e) => JSON.stringify(e)).join(', ')})`,
    });
    return z.NEVER;
  }
  return entries;
});

// Half of libuv's 4 threads, and one core fewer than the machine has: never all of either.
const defaultHashConcurrency = Math.max(1, Math.min(2, os.availableParallelism() - 1));

const sdkHeadersRefused = (sdk: string) =>
  z
    .undefined({
      error: `not supported: the ${sdk} SDK would send these headers to every ${sdk}-compatible provider; unset it`,
    })
    .optional();

const envFields = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_URL: z.string().url().optional(),
  /**
   * The same database without a transaction-pooling proxy in between, for what needs a session of
   * its own: LISTEN, graphile-worker's runner, migrations' advisory lock. Defaults to DATABASE_URL.
   */
  DATABASE_DIRECT_URL: z.string().url().optional(),
  /**
   * What DATABASE_URL's pools go through: `transaction` (a transaction-pooling proxy: no startup
   * parameters, no named prepared statements, bounds set per transaction) or `none`. Default:
   * `transaction` when DATABASE_DIRECT_URL is set and differs from DATABASE_URL (the documented way
   * to deploy behind PgBouncer), else `none`.
   */
  DATABASE_POOLER: z.enum(['transaction', 'none']).optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** Browser origins besides PUBLIC_BASE_URL's that may call POST /mcp (comma-separated). */
  MCP_ALLOWED_ORIGINS: z.string().default(''),
  S3_ENDPOINT: z.string().url().optional(),
  S3_ACCESS_KEY: z.string().default('S3RVER'),
  S3_SECRET_KEY: z.string().default('S3RVER'),
  S3_BUCKET: z.string().min(3).default('svc-platform'),
  S3_REGION: z.string().default('us-east-1'),
  S3_PUBLIC_ENDPOINT: z.string().url().optional(),
  PROVIDER: z.enum(['local', 'openai']).default('local'),
  OPENAI_BASE_URL: z.string().url().default('https://api.openai.com/v1'),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_TEXT_MODEL: z.string().default('gpt-4o-mini'),
  OPENAI_IMAGE_MODEL: z.string().default('gpt-image-1'),
  OPENAI_EMBEDDING_MODEL: z.string().default('text-embedding-3-small'),
  OPENAI_TRANSCRIPTION_MODEL: z.string().default('whisper-1'),
  // Each vendor SDK reads its own and adds those headers to every request of every client it builds,
  // whichever provider entry the client serves; nothing else from the SDKs' variables reaches a client.
  OPENAI_CUSTOM_HEADERS: sdkHeadersRefused('OpenAI'),
  ANTHROPIC_CUSTOM_HEADERS: sdkHeadersRefused('Anthropic'),
  PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  /** The gateway's providers, routes and prices: JSON, or `@path` to a file (docs/providers.md). */
  PROVIDERS: z.string().optional(),
  /** JSON object overriding entries of the default price table (see shared/config/prices.ts). */
  PRICES: z.string().optional(),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /** Server-sent event streams (task streams, streaming POST /text) a workspace may hold open at once, across every api process. */
  STREAMS_PER_WORKSPACE: z.coerce.number().int().min(1).max(1_000_000).default(100),
  /** The response cache (Cache-TTL): the largest answer stored, and what one workspace's entries may hold. */
  RESPONSE_CACHE_MAX_ENTRY_BYTES: z.coerce.number().int().min(1).default(1_048_576),
  RESPONSE_CACHE_MAX_WORKSPACE_BYTES: z.coerce.number().int().min(1).default(104_857_600),
  /** Failed authentications per client address and minute an api process takes before refusing that address. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  /**
   * Password checks (argon2id, ~50 ms of a core and 19 MiB each, on libuv's thread pool of 4 that
   * DNS, file and zlib work share) run at once per api process; a few more may wait, and beyond that
   * sign-in answers 429. By default half the pool, and never every core: a sign-in flood leaves the
   * pool and the event loop room for everything else.
   */
  SIGN_IN_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(defaultHashConcurrency),
  /**
   * Jobs of the main runner run at once per worker process (every job but webhook deliveries and
   * OCR, which have runners of their own). Jobs mostly wait (model providers, object storage) and
   * batch their database writes, so more at once costs little; uploaded inputs share a fixed memory budget.
   */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(16),
  /**
   * Worker liveness: each worker process beats this often, and its reaper passes as often; one whose
   * beat is older than WORKER_STALE_AFTER_MS is dead (its locked jobs are released, `queue stats`
   * stops counting it). Every process reading the queue must have the same values.
   */
  WORKER_HEARTBEAT_MS: z.coerce.number().int().min(500).max(60_000).default(5000),
  // Below 5 s a busy machine's pause (GC, a saturated core) could pass for a death.
  WORKER_STALE_AFTER_MS: z.coerce.number().int().min(5000).max(3_600_000).default(20_000),
  /**
   * How long a task must stay quiet after a reply ends before its brain page is synthesised: a burst
   * of messages makes one synthesis, not one per reply.
   */
  BRAIN_SYNTHESIS_DEBOUNCE_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * Webhook deliveries run at once per worker process, on a runner of their own: a receiver that
   * hangs until the deadline holds one of these, never a slot of the billed work.
   */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
  /**
   * OCR engines (tesseract worker threads, ~100 MB each once loaded) per worker process; as many OCR
   * jobs run at once, on a runner of their own. More than the CPU cores only queues inside the CPU.
   */
  OCR_ENGINES: z.coerce.number().int().min(1).max(16).default(2),
  /**
   * Video renders (ffmpeg processes, each busy on a core or more for up to ~25 s per minute of
   * 1080p) run at once per worker process, on a runner of their own.
   */
  VIDEO_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
  /**
   * The longest one OCR recognition may take: then its engine is ended and the job fails for good,
   * since the same image would take as long again.
   */
  OCR_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  /** How long a synchronous endpoint waits for its job before answering internal_error. */
  SYNC_TIMEOUT_MS: z.coerce.number().int().min(100).default(300_000),
  /**
   * How long a streamed upload may go without a byte from the client before it is abandoned (its
   * storage upload aborted, the client answered and disconnected). nginx's client_body_timeout.
   */
  UPLOAD_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  FILES_DIRECT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(5 * 1024 ** 4)
    .default(100 * 1024 * 1024),
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  VALIDATE_RESPONSES: bool.default(false),
  TRUST_PROXY: trustProxy.default(['loopback']),
  TRACE_CONTEXT_TRUST: traceContextTrust.default('none'),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol,
  OTEL_TRACES_SAMPLER: tracesSamplerName,
  OTEL_TRACES_SAMPLER_ARG: tracesSamplerArg,
  TRACE_SAMPLING_WINDOW_MS: traceSamplingWindowMs,
  /** How long a client may take to send a whole request (headers and body); Node's default. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Bearer token GET /metrics requires; unset: only loopback and private addresses are answered. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** Port of a worker process's own GET /metrics (worker dynos take no other traffic); unset: none. */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /**
   * `off` takes metrics out of the web process altogether (no GET /metrics, nothing observed per
   * call), for a deploy that scrapes nothing; the worker's METRICS_PORT is governed by itself.
   */
  METRICS: z.enum(['on', 'off']).default('on'),
  /** HireFire's token: when set, GET /hirefire answers the worker queue's latency (docs/operations.md). */
  HIREFIRE_TOKEN: z.string().min(16).optional(),
  /** Judoscale's adapter API (its add-on sets it): the first web dyno posts the queue there every 10 s. */
  JUDOSCALE_URL: z.string().url().optional(),
  /** The dyno's name, which Heroku sets (`web.1`, `worker.2`). */
  DYNO: z.string().optional(),
});

const envSchema = envFields.superRefine((e, ctx) => {
  // Two beats lost in a row (a slow query, a pause) must not make a live worker dead.
  if (e.WORKER_STALE_AFTER_MS < 3 * e.WORKER_HEARTBEAT_MS) {
    ctx.addIssue({
      code: 'custom',
      path: ['WORKER_STALE_AFTER_MS'],
      message: `must be at least 3 heartbeats (3 × WORKER_HEARTBEAT_MS = ${3 * e.WORKER_HEARTBEAT_MS})`,
    });
  }
  const refusal = windowRefusal(e.OTEL_TRACES_SAMPLER, e.TRACE_SAMPLING_WINDOW_MS);
  if (refusal !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['TRACE_SAMPLING_WINDOW_MS'], message: refusal });
  }
});

export type Config = Readonly<{
  env: 'development' | 'production' | 'test';
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  databaseDirectUrl: string | undefined;
  databasePooler: DatabasePooler;
  databasePoolSize: number;
  publicBaseUrl: string;
  /** Origins POST /mcp accepts besides the server's own (DNS-rebinding defence). */
  mcpAllowedOrigins: readonly string[];
  s3: Readonly<{
    endpoint: string | undefined;
    accessKey: string;
    secretKey: string;
    bucket: string;
    region: string;
    /** Presigned part URLs are signed for it (DESIGN.md); default: the endpoint in use. */
    publicEndpoint: string | undefined;
  }>;
  provider: Readonly<{
    name: 'local' | 'openai';
    openai: Readonly<{
      baseUrl: string;
      apiKey: string | undefined;
      textModel: string;
      imageModel: string;
      embeddingModel: string;
      transcriptionModel: string;
    }>;
    timeoutMs: number;
  }>;
  /** The price table: defaults with PRICES' entries laid over them (shared/config/prices.ts). */
  prices: Prices;
  /** Named providers and each capability's route (PROVIDERS, or the one PROVIDER names). */
  providers: ProvidersConfig;
  /** What a call of each routed capability is reserved at: its route's dearest prices (routePrices.ts). */
  reservationPrices: Record<RoutedCapability, Prices>;
  rateLimitPerMinute: number;
  streamsPerWorkspace: number;
  responseCache: Readonly<{ maxEntryBytes: number; maxWorkspaceBytes: number }>;
  authFailuresPerMinute: number;
  signInHashConcurrency: number;
  workerConcurrency: number;
  /** How often a worker process beats and reaps, and how long a silent one counts as alive. */
  workerHeartbeatMs: number;
  workerStaleAfterMs: number;
  brainSynthesisDebounceMs: number;
  webhookConcurrency: number;
  ocrEngines: number;
  videoConcurrency: number;
  ocrTimeoutMs: number;
  syncTimeoutMs: number;
  uploadIdleTimeoutMs: number;
  /** POST /files's limit (DESIGN.md: 100 MiB); larger files take a presigned upload. */
  filesDirectMaxBytes: number;
  webhookAllowPrivate: boolean;
  validateResponses: boolean;
  trustProxy: TrustProxy;
  traceContextTrust: TraceContextTrust;
  requestTimeoutMs: number;
  logLevel: string;
  metricsToken: string | undefined;
  metricsPort: number | undefined;
  /** OpenTelemetry tracing is on (see isTracingRequested); the SDK itself reads the OTEL_* variables. */
  tracing: boolean;
  /** OTEL_TRACES_SAMPLER / _ARG: the api decides a parent-based sampler's roots itself (edgeShare). */
  traceSampling: TracesSampler;
  metricsEnabled: boolean;
  hirefireToken: string | undefined;
  judoscaleUrl: string | undefined;
  dyno: string | undefined;
}>;

/**
 * Parses the environment once into a frozen config. The only reader of `process.env` in the project.
 * @throws Error listing every invalid variable at once, so a bad deploy fails with one clear message.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means unset (`DATABASE_URL=` in a shell or a dyno config).
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  const lines = parsed.success ? [] : parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
  let prices: Prices | undefined;
  try {
    prices = parsePrices(present.PRICES);
  } catch (error) {
    lines.push(...(error as Error).message.split('\n').slice(1));
  }
  let providers: ProvidersConfig | undefined;
  if (parsed.success && prices !== undefined) {
    try {
      providers = parseProvidersConfig(present.PROVIDERS, present, singleProvider(parsed.data), prices);
    } catch (error) {
      lines.push(...(error as Error).message.split('\n').slice(1));
    }
  }
  if (!parsed.success || prices === undefined || providers === undefined) {
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  return Object.freeze({
    env: e.NODE_ENV,
    port: e.PORT,
    dataDir: path.resolve(e.DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    databaseDirectUrl: e.DATABASE_DIRECT_URL,
    databasePooler: e.DATABASE_POOLER ?? defaultPooler(e.DATABASE_URL, e.DATABASE_DIRECT_URL),
    databasePoolSize: e.DATABASE_POOL_SIZE,
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    mcpAllowedOrigins: e.MCP_ALLOWED_ORIGINS.split(',')
      .map((o) => o.trim().replace(/\/+$/, ''))
      .filter((o) => o !== ''),
    s3: Object.freeze({
      endpoint: e.S3_ENDPOINT,
      accessKey: e.S3_ACCESS_KEY,
      secretKey: e.S3_SECRET_KEY,
      bucket: e.S3_BUCKET,
      region: e.S3_REGION,
      publicEndpoint: e.S3_PUBLIC_ENDPOINT,
    }),
    provider: Object.freeze({
      name: e.PROVIDER,
      openai: Object.freeze({
        baseUrl: e.OPENAI_BASE_URL.replace(/\/+$/, ''),
        apiKey: e.OPENAI_API_KEY,
        textModel: e.OPENAI_TEXT_MODEL,
        imageModel: e.OPENAI_IMAGE_MODEL,
        embeddingModel: e.OPENAI_EMBEDDING_MODEL,
        transcriptionModel: e.OPENAI_TRANSCRIPTION_MODEL,
      }),
      timeoutMs: e.PROVIDER_TIMEOUT_MS,
    }),
    prices,
    providers,
    reservationPrices: Object.fromEntries(
      routedCapabilities.map((c) => [c, reservationPrices(providers, c, prices)]),
    ) as Record<RoutedCapability, Prices>,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    streamsPerWorkspace: e.STREAMS_PER_WORKSPACE,
    responseCache: Object.freeze({
      maxEntryBytes: e.RESPONSE_CACHE_MAX_ENTRY_BYTES,
      maxWorkspaceBytes: e.RESPONSE_CACHE_MAX_WORKSPACE_BYTES,
    }),
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    signInHashConcurrency: e.SIGN_IN_HASH_CONCURRENCY,
    workerConcurrency: e.WORKER_CONCURRENCY,
    workerHeartbeatMs: e.WORKER_HEARTBEAT_MS,
    workerStaleAfterMs: e.WORKER_STALE_AFTER_MS,
    brainSynthesisDebounceMs: e.BRAIN_SYNTHESIS_DEBOUNCE_MS,
    webhookConcurrency: e.WEBHOOK_CONCURRENCY,
    ocrEngines: e.OCR_ENGINES,
    videoConcurrency: e.VIDEO_CONCURRENCY,
    ocrTimeoutMs: e.OCR_TIMEOUT_MS,
    syncTimeoutMs: e.SYNC_TIMEOUT_MS,
    uploadIdleTimeoutMs: e.UPLOAD_IDLE_TIMEOUT_MS,
    filesDirectMaxBytes: e.FILES_DIRECT_MAX_BYTES,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    validateResponses: e.VALIDATE_RESPONSES,
    trustProxy: e.TRUST_PROXY,
    traceContextTrust: e.TRACE_CONTEXT_TRUST,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    metricsToken: e.METRICS_TOKEN,
    metricsPort: e.METRICS_PORT,
    tracing: isTracingRequested(env),
    traceSampling: tracesSampler(
      e.OTEL_TRACES_SAMPLER,
      e.OTEL_TRACES_SAMPLER_ARG,
      e.TRACE_SAMPLING_WINDOW_MS,
    ),
    metricsEnabled: e.METRICS === 'on',
    hirefireToken: e.HIREFIRE_TOKEN,
    judoscaleUrl: e.JUDOSCALE_URL?.replace(/\/+$/, ''),
    dyno: e.DYNO,
  });
}

/**
 * A direct URL of its own says DATABASE_URL goes through a pooler. Transaction mode is the safe guess:
 * on a session it only costs a little speed, while session habits through a transaction pooler fail
 * every connection (startup parameters) or statement (named prepared statements).
 */
function defaultPooler(databaseUrl: string | undefined, directUrl: string | undefined): DatabasePooler {
  return databaseUrl !== undefined && directUrl !== undefined && directUrl !== databaseUrl
    ? 'transaction'
    : 'none';
}

/** The one-provider case of PROVIDER and OPENAI_*, which the gateway runs when PROVIDERS is unset. */
function singleProvider(e: z.infer<typeof envSchema>): SingleProviderSettings {
  return {
    name: e.PROVIDER,
    openai: {
      baseUrl: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      models: {
        text: e.OPENAI_TEXT_MODEL,
        image: e.OPENAI_IMAGE_MODEL,
        embedding: e.OPENAI_EMBEDDING_MODEL,
        transcription: e.OPENAI_TRANSCRIPTION_MODEL,
      },
    },
    timeoutMs: e.PROVIDER_TIMEOUT_MS,
  };
}

/**
 * How spans travel over OTLP/HTTP: `http/protobuf` (the OTLP default, about a third of JSON's
 * encoding CPU and bytes per span) or `http/json`, from OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL; undefined for a value loadConfig refuses (gRPC is not offered).
 */
export function tracesProtocol(env: NodeJS.ProcessEnv = process.env): OtlpProtocol | undefined {
  const parsed = otlpProtocol.safeParse(
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL,
  );
  return parsed.success ? (parsed.data ?? 'http/protobuf') : undefined;
}

/**
 * Whether to trace: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or, for traces alone,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none
 * says otherwise. Apart from loadConfig because an entry point decides it before importing anything
 * it might instrument.
 */
export function isTracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return false;
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  return !disabled && env.OTEL_TRACES_EXPORTER?.trim() !== 'none';
}

/**
 * The configured secret values, for the logger to scrub wherever they appear (a provider echoing a
 * key in an error, a client library printing its options).
 */
export function configSecrets(config: Config): string[] {
  const secrets = [
    config.s3.secretKey,
    config.provider.openai.apiKey,
    config.metricsToken,
    config.hirefireToken,
    // Judoscale's URL carries the app's token in its path.
    config.judoscaleUrl,
    ...Object.values(config.providers.providers).map((p) => p.apiKey),
  ];
  for (const url of [config.databaseUrl, config.databaseDirectUrl]) {
    if (url !== undefined) secrets.push(decodeURIComponent(new URL(url).password));
  }
  return secrets.filter((s): s is string => s !== undefined && s !== '');
}

/** Public URL roots fixed by DESIGN.md "Decisions". */
export const apiBasePath = '/api/pub/v1';
export function baseUrl(config: Config): string {
  return `${config.publicBaseUrl}${apiBasePath}`;
}
