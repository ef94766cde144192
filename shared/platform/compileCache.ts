import module from 'node:module';

/**
 * Imported first by each long-running entry point: the platform they import next (dynamically, after
 * tracing starts) is compiled once and kept on disk (NODE_COMPILE_CACHE, else the OS temp directory;
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off), so a restarted dyno or a scaled-out worker starts on
 * less CPU. Node checks each entry against its source, so an upgrade never runs stale code.
 */
module.enableCompileCache();
