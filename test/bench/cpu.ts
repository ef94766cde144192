import { readdirSync, readFileSync } from 'node:fs';

import type pg from 'pg';

// Linux reports process and thread times in clock ticks of 10 ms (USER_HZ 100 on every common build).
const msPerTick = 10;

/** Cumulative CPU ticks of this machine: all, and stolen by the hypervisor (0 where unknown). */
export function cpuTicks(): { total: number; steal: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
  } catch {
    return { total: 0, steal: 0 };
  }
}

/** User + system CPU of one /proc stat file in ms; 0 when it is gone or unreadable. */
export function statCpuMs(file: string): number {
  try {
    // The command name in parentheses may hold spaces: count fields after its closing bracket.
    const fields = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * msPerTick;
  } catch {
    return 0;
  }
}

/**
 * CPU ms so far of every thread of process `pid`, from the scheduler's own nanosecond count
 * (/proc/<pid>/task/<tid>/schedstat): a 10 ms tick is 1 % of a 1 s window, too coarse for a few
 * per cent between two processes. Falls back to the ticks of /proc/<pid>/stat where schedstat is
 * missing; 0 when the process is gone.
 */
export function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // The thread ended while we looked.
      }
    }
    return ns / 1e6;
  } catch {
    return statCpuMs(`/proc/${pid}/stat`);
  }
}

/**
 * CPU ms so far of this process's main thread (the event loop the api and worker share in the
 * bench; the load generator has its own thread) and of every PostgreSQL process on the machine.
 */
export function serverAndPostgresCpuMs(): { server: number; postgres: number } {
  let postgres = 0;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) {
          postgres += statCpuMs(`/proc/${pid}/stat`);
        }
      } catch {
        // The process ended while we looked.
      }
    }
  } catch {
    return { server: 0, postgres: 0 };
  }
  return { server: statCpuMs(`/proc/self/task/${process.pid}/stat`), postgres };
}

/**
 * CPU of the connected database's backends so far, by pid. Only this database's: PostgreSQL servers
 * of other runs on the machine would blur the all-postgres figure.
 */
export async function backendCpu(admin: pg.Client): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  return new Map(rows.map((r) => [r.pid, statCpuMs(`/proc/${r.pid}/stat`)]));
}

/** CPU spent between two backendCpu readings (a backend born between them spent all of its there). */
export function backendCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
  return ms;
}
