import { loadConfig } from '../../shared/config/config.ts';
import { laneNames } from '../../shared/queue/lanes.ts';
import { queueStats } from '../../shared/queue/queueStats.ts';
import { CliError } from '../cliError.ts';
import { type CommandTable, optionalString } from '../commandTable.ts';

export const queueCommands: CommandTable = {
  'queue stats': {
    summary:
      "The job queue of the whole fleet, lane by lane: jobs due and waiting, the oldest one's age in seconds (what to autoscale worker dynos on), jobs running, live worker processes.",
    flags: {
      lane: optionalString('L', `Only this lane: ${laneNames.join(', ')}.`),
    },
    run: async (pool, v, config) => {
      const only = v.lane as string | undefined;
      if (only !== undefined && !(laneNames as readonly string[]).includes(only)) {
        throw new CliError('invalid_arguments', `--lane must be one of ${laneNames.join(', ')}`);
      }
      const { lanes } = await queueStats(pool, (config ?? loadConfig()).workerStaleAfterMs);
      return { lanes: only === undefined ? lanes : lanes.filter((lane) => lane.lane === only) };
    },
  },
};
