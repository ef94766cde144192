import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';

import { describe, expect, it } from '@jest/globals';

const root = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** Packages a tree of source files imports: static and dynamic imports, require and require.resolve. */
function importedPackages(dirs: string[]): Set<string> {
  const found = new Set<string>();
  for (const dir of dirs) {
    const files = readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' }).filter((f) =>
      /\.(ts|js)$/.test(f),
    );
    for (const file of files) {
      const text = readFileSync(path.join(root, dir, file), 'utf8');
      const specifiers = text.matchAll(
        /(?:\bfrom\s+|\bimport\s*\(\s*|\brequire(?:\.resolve)?\(\s*|^import\s+)'([^'./][^']*)'/gm,
      );
      for (const [, specifier] of specifiers) {
        if (specifier!.startsWith('node:') || builtinModules.includes(specifier!)) continue;
        const parts = specifier!.split('/');
        found.add(specifier!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
      }
    }
  }
  return found;
}

const runtime = importedPackages(['api', 'worker', 'shared', 'cli', 'bin', 'db']);
const tests = importedPackages(['test']);

describe('package.json', () => {
  it('lists every package the running platform imports under dependencies', () => {
    expect(runtime).toContain('slonik');
    expect([...runtime].filter((p) => !(p in pkg.dependencies))).toEqual([]);
  });

  it('keeps packages only tests and benches import out of dependencies', () => {
    expect(tests).toContain('supertest');
    const testOnly = [...tests].filter((p) => !runtime.has(p));
    expect(testOnly.filter((p) => p in pkg.dependencies)).toEqual([]);
    expect(testOnly.filter((p) => !(p in pkg.devDependencies))).toEqual([]);
  });
});
