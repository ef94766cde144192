import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { expect, it } from '@jest/globals';

import { logLines, projectRoot } from '../helpers/processes.ts';

const run = promisify(execFile);

it('a process that exits right after logging writes every line, in the order logged', async () => {
  // Standard output is a pipe here, as under a supervisor, a dyno's log router or npm.
  const { stdout } = await run(process.execPath, [path.join(projectRoot, 'test', 'helpers', 'loggerExit.ts')], {
    env: { ...process.env, UV_THREADPOOL_SIZE: '4' },
  });
  expect(logLines(stdout).map((line) => line.msg)).toEqual(['first', 'second']);
});
