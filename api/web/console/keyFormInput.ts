import type { Request } from 'express';

import { parseMajorAmount } from '../../../shared/billing/majorUnits.ts';
import { type KeyRequestField, resolveKeyRequest } from '../../../shared/keys/keyRequest.ts';
import type { CreateKeyInput } from '../../../shared/keys/mintKeys.ts';
import type { BrowserContext } from '../browserContext.ts';
import type { ConsoleContext } from './context.ts';
import { field, fields } from './context.ts';
import { type FieldErrors, sentence } from './forms.ts';
import { keyFieldIds, type KeyFormValues } from './keyFormView.ts';

/** The key form as sent, every value kept as typed (a refused form shows them again). */
export function keyFormValues(req: Request): KeyFormValues {
  const level = field(req, 'scope_level');
  return {
    name: field(req, 'name'),
    projects: fields(req, 'projects'),
    mode: field(req, 'mode') === 'live' ? 'live' : 'test',
    scopeLevel: level === 'package' || level === 'operation' ? level : 'app',
    packages: fields(req, 'packages'),
    operations: fields(req, 'operations'),
    expiresAt: field(req, 'expires_at'),
    ipAllowlist: field(req, 'ip_allowlist'),
    cap: field(req, 'monthly_spend_cap'),
  };
}

/** The form's field where the domain's problem with a request shows, by the part it is about. */
const fieldOf = (f: KeyRequestField, v: KeyFormValues): string =>
  f === 'scope'
    ? v.scopeLevel === 'package'
      ? keyFieldIds.packages
      : keyFieldIds.operations
    : keyFieldIds[f];

/**
 * The key the form asks for, by the same rules as `key create` (resolveKeyRequest), or each problem
 * at its field. The console's own rules come first: a name (the form's only way to tell keys apart),
 * a ticked choice at the chosen scope level, and the cap in the currency's major unit.
 */
export async function readKeyForm(
  web: BrowserContext,
  c: ConsoleContext,
  v: KeyFormValues,
): Promise<{ input: CreateKeyInput } | { errors: FieldErrors }> {
  const errors: Record<string, string> = {};
  if (v.name === '') errors[keyFieldIds.name] = 'Enter a name for the key, so you can tell it apart later.';
  if (v.scopeLevel === 'package' && v.packages.length === 0) {
    errors[keyFieldIds.packages] = 'Choose at least one package, or another scope.';
  }
  if (v.scopeLevel === 'operation' && v.operations.length === 0) {
    errors[keyFieldIds.operations] = 'Choose at least one operation, or another scope.';
  }
  const cap = v.cap === '' ? { minor: null } : parseMajorAmount(v.cap, c.member.currency);
  if ('problem' in cap) errors[keyFieldIds.cap] = cap.problem;
  const resolved = await resolveKeyRequest(web.pool, web.doc, {
    member: c.member,
    projectIds: [...v.projects],
    livemode: v.mode === 'live',
    name: v.name || undefined,
    packages: v.scopeLevel === 'package' ? [...v.packages] : undefined,
    operations: v.scopeLevel === 'operation' ? [...v.operations] : undefined,
    // datetime-local has no zone: the form says UTC.
    expiresAt: v.expiresAt === '' ? undefined : `${v.expiresAt}Z`,
    ipAllowlist: v.ipAllowlist
      .split(',')
      .map((cidr) => cidr.trim())
      .filter(Boolean),
    monthlySpendCapMinor: 'minor' in cap ? cap.minor : null,
  });
  if ('problem' in resolved) {
    const id = fieldOf(resolved.problem.field, v);
    errors[id] ??= sentence(resolved.problem.message);
  }
  if ('input' in resolved && Object.keys(errors).length === 0) return { input: resolved.input };
  // The summary lists the problems in the form's order.
  const order: string[] = Object.values(keyFieldIds);
  return {
    errors: Object.fromEntries(
      Object.entries(errors).sort(([a], [b]) => order.indexOf(a) - order.indexOf(b)),
    ),
  };
}
