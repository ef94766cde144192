import { nameSpendParts, type SpendSplit } from '../../../shared/db/queries/meteringRecords.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import type { BrowserContext } from '../browserContext.ts';
import type { ConsoleContext } from './consoleContextType.ts';

/** An operation's title from the API document (metering records name it by id or scope). */
export function operationTitle(doc: ApiDocument, operation: string): string {
  return doc.operations.find((o) => o.id === operation || o.scope === operation)?.title || operation;
}

/** The names of a split's parts, so charts and tables show names, not ids. */
export async function namesFor(
  web: BrowserContext,
  c: ConsoleContext,
  split: SpendSplit,
  parts: readonly (string | null)[],
): Promise<Map<string, string>> {
  const ids = [...new Set(parts.filter((p): p is string => p !== null))];
  if (split === 'operation') return new Map(ids.map((id) => [id, operationTitle(web.doc, id)]));
  return nameSpendParts(web.pool, c.member.workspace_id, split, ids);
}

/** What of a metering record names something. */
type NamedRecord = {
  project_id: string;
  key_id: string | null;
  oauth_app_id: string | null;
  operation: string;
};

const recordParts: [SpendSplit, (r: NamedRecord) => string | null][] = [
  ['project', (r) => r.project_id],
  ['key', (r) => r.key_id],
  ['app', (r) => r.oauth_app_id],
  ['operation', (r) => r.operation],
];

/** Every name a list of metering records refers to: projects, keys, apps and operations. */
export async function recordNames(
  web: BrowserContext,
  c: ConsoleContext,
  records: readonly NamedRecord[],
): Promise<Map<string, string>> {
  const named = await Promise.all(
    recordParts.map(([split, part]) => namesFor(web, c, split, records.map(part))),
  );
  return new Map(named.flatMap((names) => [...names]));
}
