import { describe, expect, it } from '@jest/globals';

import { isTracingRequested, loadConfig, tracesProtocol } from '../../shared/config/config.ts';
import { edgeShare, type TracesSampler, tracesSamplerFromEnv } from '../../shared/config/tracesSampler.ts';
import { testEnv } from '../helpers/context.ts';

const endpoint = 'http://collector:4318';

describe('isTracingRequested', () => {
  it.each([
    ['no OTLP endpoint', {}, false],
    ['an empty endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: '' }, false],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, true],
    [
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` },
      true,
    ],
    [
      'an endpoint with OTEL_SDK_DISABLED=true',
      { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'TRUE' },
      false,
    ],
    [
      'an endpoint with OTEL_SDK_DISABLED=false',
      { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'false' },
      true,
    ],
    [
      'an endpoint with OTEL_TRACES_EXPORTER=none',
      { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none' },
      false,
    ],
  ])('%s', (_case, env, expected) => {
    expect(isTracingRequested(env)).toBe(expected);
  });
});

describe('tracesProtocol', () => {
  it('is protobuf unless asked for JSON, the traces variable before the general one', () => {
    expect(tracesProtocol({})).toBe('http/protobuf');
    expect(tracesProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(
      tracesProtocol({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }),
    ).toBe('http/protobuf');
  });

  it('refuses gRPC at start, saying what is offered', () => {
    expect(tracesProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBeUndefined();
    expect(() => loadConfig(testEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json/,
    );
  });
});

describe('OTEL_TRACES_SAMPLER', () => {
  it('is parent-based always-on where unset, and a ratio sampler keeps 1 where its argument is unset or blank', () => {
    expect(loadConfig(testEnv({})).traceSampling).toEqual({ name: 'parentbased_always_on', ratio: 1 });
    const ratio = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' };
    expect(loadConfig(testEnv(ratio)).traceSampling).toEqual({ name: 'parentbased_traceidratio', ratio: 1 });
    expect(loadConfig(testEnv({ ...ratio, OTEL_TRACES_SAMPLER_ARG: ' ' })).traceSampling.ratio).toBe(1);
    expect(loadConfig(testEnv({ ...ratio, OTEL_TRACES_SAMPLER_ARG: '0.05' })).traceSampling.ratio).toBe(0.05);
    expect(tracesSamplerFromEnv({ ...ratio, OTEL_TRACES_SAMPLER_ARG: '0' })).toEqual({
      name: 'parentbased_traceidratio',
      ratio: 0,
    });
  });

  it('refuses at start a sampler the SDK would silently replace by always-on, and a ratio outside 0…1', () => {
    expect(() => loadConfig(testEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio ' }))).toThrow(
      /OTEL_TRACES_SAMPLER: must be one of parentbased_always_on/,
    );
    expect(() => loadConfig(testEnv({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }))).toThrow(
      /OTEL_TRACES_SAMPLER:/,
    );
    for (const arg of ['1.5', '-0.1', 'one in twenty']) {
      expect(() => loadConfig(testEnv({ OTEL_TRACES_SAMPLER_ARG: arg }))).toThrow(
        /OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/,
      );
      expect(tracesSamplerFromEnv({ OTEL_TRACES_SAMPLER_ARG: arg })).toBeUndefined();
    }
  });

  it('takes TRACE_SAMPLING_WINDOW_MS with parentbased_traceidratio only, and whole milliseconds up to a minute', () => {
    const ratio = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.05' };
    expect(loadConfig(testEnv(ratio)).traceSampling).toEqual({
      name: 'parentbased_traceidratio',
      ratio: 0.05,
    });
    expect(loadConfig(testEnv({ ...ratio, TRACE_SAMPLING_WINDOW_MS: '50' })).traceSampling).toEqual({
      name: 'parentbased_traceidratio',
      ratio: 0.05,
      windowMs: 50,
    });
    for (const window of ['0', '60001', '12.5', 'fifty']) {
      expect(() => loadConfig(testEnv({ ...ratio, TRACE_SAMPLING_WINDOW_MS: window }))).toThrow(
        /TRACE_SAMPLING_WINDOW_MS: must be a whole number of milliseconds from 1 to 60000/,
      );
    }
    // A window the sampler would ignore is refused rather than silently doing nothing.
    expect(() => loadConfig(testEnv({ TRACE_SAMPLING_WINDOW_MS: '50' }))).toThrow(
      /TRACE_SAMPLING_WINDOW_MS: applies only with OTEL_TRACES_SAMPLER=parentbased_traceidratio \(it is unset\)/,
    );
    expect(() =>
      loadConfig(testEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', TRACE_SAMPLING_WINDOW_MS: '50' })),
    ).toThrow(/\(it is traceidratio\)/);
  });

  it('leaves the root decision to the api for the parent-based samplers only', () => {
    const share = (name: TracesSampler['name'], ratio = 1) => edgeShare({ name, ratio });
    expect(share('parentbased_always_on')).toBe(1);
    expect(share('parentbased_always_off')).toBe(0);
    expect(share('parentbased_traceidratio', 0.05)).toBe(0.05);
    for (const name of ['always_on', 'always_off', 'traceidratio'] as const) {
      expect(share(name)).toBeUndefined();
    }
  });
});
