import { describe, expect, it } from '@jest/globals';

import { isTracingRequested } from '../../shared/config/config.ts';

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
