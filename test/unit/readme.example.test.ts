import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from '@jest/globals';

const root = path.resolve(import.meta.dirname, '../..');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

function exampleSession(): string {
  const section = readme.slice(readme.indexOf('## Example session'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README has no example session block');
  return block[1]!;
}

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(path.join(root, dir, f), 'utf8'));
}

/** Every id prefix the platform mints: `newId('task')`, `` `req_${randomBase62(…)}` ``, key secrets. */
function mintedPrefixes(): Set<string> {
  const prefixes = new Set<string>(['svc_sk_test', 'svc_sk_live']);
  for (const text of ['api', 'worker', 'shared', 'cli', 'bin'].flatMap(sources)) {
    for (const m of text.matchAll(/newId\('([a-z]+)'\)/g)) prefixes.add(m[1]!);
    for (const m of text.matchAll(/`([a-z]+(?:_[a-z]+)*)_\$\{randomBase62\(/g)) prefixes.add(m[1]!);
  }
  return prefixes;
}

describe('the README example session', () => {
  it('shows only id prefixes the platform really mints', () => {
    const prefixes = mintedPrefixes();
    expect([...prefixes]).toEqual(expect.arrayContaining(['task', 'job', 'req', 'msg']));
    const shown = [...exampleSession().matchAll(/\b([a-z]+(?:_[a-z]+)*)_…/g)].map((m) => m[1]!);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.filter((prefix) => !prefixes.has(prefix))).toEqual([]);
  });

  it('reads only files a fresh clone has', () => {
    // Files the commands read: `base64 [-w0] [<] FILE`, and curl's `@FILE` uploads.
    const read = [...exampleSession().matchAll(/(?:\bbase64(?:\s+-w0)?\s+<?\s*|[\s'"]@)([\w./-]+)/g)].map(
      (m) => m[1]!,
    );
    expect(read.length).toBeGreaterThan(0);
    for (const file of read) {
      expect({ file, exists: existsSync(path.join(root, file)) }).toEqual({ file, exists: true });
    }
  });
});
