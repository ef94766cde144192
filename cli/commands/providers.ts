import { loadConfig } from '../../shared/config/config.ts';
import { CircuitBreaker } from '../../shared/providers/circuitBreaker.ts';
import { CliError } from '../cliError.ts';
import { type CommandTable, optionalString } from '../commandTable.ts';

export const providerCommands: CommandTable = {
  'providers status': {
    summary:
      "The model gateway's providers (PROVIDERS, or the one PROVIDER names): the capabilities each is routed for, and its circuit as every worker process sees it (closed, open until a time, or half-open: one trial call next).",
    flags: {
      provider: optionalString('P', 'Only this provider (a name in PROVIDERS).'),
    },
    run: async (pool, values, config) => {
      const { providers, routes } = (config ?? loadConfig()).providers;
      const only = values.provider as string | undefined;
      if (only !== undefined && providers[only] === undefined) {
        throw new CliError(
          'invalid_arguments',
          `--provider must be one of ${Object.keys(providers).join(', ')}`,
        );
      }
      const specs = Object.values(providers).filter((spec) => only === undefined || spec.name === only);
      const breaker = new CircuitBreaker(pool, (name) => ({ ...providers[name]!.breaker, trialMs: 0 }));
      const circuits = await breaker.status(specs.map((spec) => spec.name));
      return {
        providers: specs.map((spec, i) => ({
          ...circuits[i]!,
          type: spec.type,
          capabilities: Object.entries(routes)
            .filter(([, route]) => route.some((entry) => entry.provider === spec.name))
            .map(([capability]) => capability),
        })),
      };
    },
  },
};
