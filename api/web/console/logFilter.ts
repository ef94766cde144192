import type { RequestLogFilter } from '../../../shared/db/queries/requestLogs.ts';
import type { ApiDocument } from '../../openapi/document.ts';

/** What the filter form may choose from: the workspace's keys and apps, by name. */
export type LogChoices = {
  keys: readonly { id: string; name: string; revoked: boolean }[];
  apps: readonly { id: string; name: string }[];
};

/** The quick ranges the log offers, as a `range` parameter: a period back from now. */
export const quickRanges = [
  { id: '1h', label: 'Last hour', ms: 3_600_000 },
  { id: '1d', label: 'Last day', ms: 86_400_000 },
  { id: '7d', label: 'Last week', ms: 7 * 86_400_000 },
] as const;

const isoOrUndefined = (value: string) =>
  value !== '' && !Number.isNaN(Date.parse(`${value}Z`)) ? new Date(`${value}Z`).toISOString() : undefined;

function readStatus(status: string): RequestLogFilter['status'] | null {
  if (status === '') return undefined;
  if (/^[1-5]xx$/.test(status)) return { class: Number(status[0]) };
  if (/^[1-5]\d\d$/.test(status)) return { exact: Number(status) };
  return null;
}

/**
 * Reads the filters from the query string. A filter that cannot be applied is not silently
 * dropped or matched against nothing: the problems say what is wrong with each, in words.
 */
export function readLogFilter(
  doc: ApiDocument,
  choices: LogChoices,
  query: (name: string) => string,
  now: number,
): { filter: RequestLogFilter; problems: string[] } {
  const problems: string[] = [];
  const range = quickRanges.find((r) => r.id === query('range'));
  if (query('range') && !range) problems.push('That quick range is not one of the last hour, day or week.');
  if (range && query('since')) problems.push('Choose a quick range or a From time, not both.');
  const status = readStatus(query('status'));
  if (status === null)
    {problems.push(`Status “${query('status')}” is not a code such as 404 or a class such as 4xx.`);}
  const key = query('key');
  if (key && !choices.keys.some((k) => k.id === key))
    {problems.push('That key is not one of this workspace’s.');}
  const app = query('app');
  if (app && !choices.apps.some((a) => a.id === app))
    {problems.push('That app has no calls in this workspace.');}
  const operation = query('operation');
  if (operation && !doc.operations.some((o) => o.id === operation))
    {problems.push('That operation does not exist.');}
  for (const [name, words] of [
    ['since', 'From'],
    ['until', 'Until'],
  ] as const) {
    if (query(name) && !isoOrUndefined(query(name))) problems.push(`${words} is not a date and time.`);
  }
  return {
    filter: {
      keyId: key || undefined,
      oauthAppId: app || undefined,
      status: status ?? undefined,
      operation: operation || undefined,
      since: range ? new Date(now - range.ms).toISOString() : isoOrUndefined(query('since')),
      until: isoOrUndefined(query('until')),
    },
    problems,
  };
}
