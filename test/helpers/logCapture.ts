import { Writable } from 'node:stream';

import { createLogger } from '../../shared/observability/logger.ts';

/** A logger whose JSON lines are collected instead of printed (the production logger otherwise). */
export function capturingLogger(options: { level?: string; secrets?: string[] } = {}) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger(options.level ?? 'debug', 'test', {
    secrets: options.secrets ?? [],
    destination,
  });
  return { logger, lines };
}

/** The lines at pino's error level (50) or above: what an operator is paged for. */
export function errorLines(lines: readonly string[]): Record<string, unknown>[] {
  return lines
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => typeof line.level === 'number' && line.level >= 50);
}
