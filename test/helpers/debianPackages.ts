import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A Debian package some tests need, the binary that shows it is installed, and where a skip is told. */
export type DebianPackage = {
  name: string;
  binary: string;
  /** The environment variable globalSetup sets to the skip reason where the package cannot be had. */
  skipVariable: string;
  /** What the skip reason says is skipped ("PgBouncer tests"). */
  tests: string;
  /** Extra `apt-get install` arguments (`--no-install-recommends`). */
  installArgs?: string[];
};

const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
// Another apt run (a parallel job, unattended upgrades) holds dpkg's lock for a while: wait for it.
const aptLockWait = ['-o', 'DPkg::Lock::Timeout=300'];
const aptOptions = { env: aptEnv, maxBuffer: 16 * 1024 * 1024 };

async function hasAptGet(): Promise<boolean> {
  try {
    await execFileAsync('apt-get', ['--version']);
    return true;
  } catch {
    return false;
  }
}

/**
 * Once per test run (globalSetup): makes sure each of `packages` is installed, running one
 * `apt-get update` and then `apt-get install -y <name>` for each one missing. Where apt-get itself is
 * missing, records why in each missing package's skip variable and prints that one line.
 * @throws when apt-get is there but an install fails (not root, no network): CI must run these tests.
 */
export async function ensureDebianPackages(packages: DebianPackage[]): Promise<void> {
  const missing = packages.filter((p) => !existsSync(p.binary));
  if (missing.length === 0) return;
  if (!(await hasAptGet())) {
    for (const p of missing) {
      const reason = `${p.tests} skipped: the Debian package ${p.name} is not installed and apt-get is unavailable`;
      process.env[p.skipVariable] = reason;
      process.stderr.write(`${reason}\n`);
    }
    return;
  }
  let step = 'update the package lists';
  try {
    await execFileAsync('apt-get', [...aptLockWait, 'update'], aptOptions);
    for (const p of missing) {
      step = `install the Debian package ${p.name}`;
      await execFileAsync(
        'apt-get',
        [...aptLockWait, 'install', '-y', ...(p.installArgs ?? []), p.name],
        aptOptions,
      );
    }
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new Error(`could not ${step}: ${stderr?.trim() || String(error)}`, { cause: error });
  }
  for (const p of missing) {
    if (!existsSync(p.binary)) throw new Error(`the ${p.name} package left no ${p.binary}`);
  }
}
