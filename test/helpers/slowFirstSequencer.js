import path from 'node:path';

import TestSequencer from '@jest/test-sequencer';

import { slowTestFiles } from './slowTestFiles.js';

/**
 * jest's order (files that failed last time first, then longest first by its timing cache), except
 * that a file the cache has no time for takes its time from the committed table of slow files, and
 * files with no time at all run after those with one, largest first. jest itself runs untimed files
 * first, which in a fresh clone (no cache: every file untimed) means by size, and puts a minute-long
 * file wherever its size falls, possibly last. One sequencer sorts both projects' files together.
 */
export default class SlowFirstSequencer extends TestSequencer {
  time(test) {
    const cached = super.time(test);
    if (cached != null) return cached;
    const seconds = slowTestFiles.get(path.relative(test.context.config.rootDir, test.path));
    return seconds == null ? undefined : seconds * 1000;
  }

  sort(tests) {
    const sizes = new Map();
    const size = (test) => {
      if (!sizes.has(test.path)) sizes.set(test.path, test.context.hasteFS.getSize(test.path) ?? 0);
      return sizes.get(test.path);
    };
    for (const test of tests) test.duration = this.time(test);
    return tests.sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      if ((a.duration == null) !== (b.duration == null)) return a.duration == null ? 1 : -1;
      if (a.duration != null && b.duration != null) return b.duration - a.duration;
      return size(b) - size(a);
    });
  }
}
