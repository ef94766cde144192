import { describe, expect, it } from '@jest/globals';

import { scopeAllows } from '../../shared/auth/principal.ts';

describe('scopeAllows', () => {
  it('app level covers everything', () => {
    expect(scopeAllows({ level: 'app', packages: [], operations: [] }, 'files.upload')).toBe(true);
  });
  it('package level covers the operations of its packages', () => {
    const scope = { level: 'package' as const, packages: ['text', 'tasks'], operations: [] };
    expect(scopeAllows(scope, 'text.generate')).toBe(true);
    expect(scopeAllows(scope, 'tasks.listMessages')).toBe(true);
    expect(scopeAllows(scope, 'images.generate')).toBe(false);
  });
  it('operation level covers exactly the listed operations', () => {
    const scope = { level: 'operation' as const, packages: [], operations: ['tasks.read'] };
    expect(scopeAllows(scope, 'tasks.read')).toBe(true);
    expect(scopeAllows(scope, 'tasks.create')).toBe(false);
  });
});
