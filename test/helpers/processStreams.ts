import { afterAll } from '@jest/globals';

/**
 * Each test file loads its own copy of every module, but stdout and stderr belong to the jest worker
 * process that runs file after file. A module that listens on them when it loads (roarr, slonik's
 * logger, adds an 'error' listener to stdout) would add one more listener with every file, and
 * after ten files Node warns of a leak. What a file's modules added goes when the file ends.
 */
const streams = [process.stdout, process.stderr];
const before = streams.map((stream) => new Set(stream.listeners('error')));

afterAll(() => {
  streams.forEach((stream, i) => {
    for (const listener of stream.listeners('error')) {
      if (!before[i]!.has(listener)) stream.removeListener('error', listener as (error: Error) => void);
    }
  });
});
