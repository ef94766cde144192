import { describe, expect, it } from '@jest/globals';

import { isTracingRequested, loadConfig, tracesProtocol } from '../../shared/config/config.ts';
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
      tracesProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }),
    ).toBe('http/protobuf');
  });

  it('refuses gRPC at start, saying what is offered', () => {
    expect(tracesProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBeUndefined();
    expect(() => loadConfig(testEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json/,
    );
  });
});
