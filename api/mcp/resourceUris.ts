import { icons } from './icons.ts';

/**
 * The resources' URIs (docs/mcp.md): stable, one per thing, readable by any credential of the
 * workspace that may see it. Pages are named by slug (what people link to), files and tasks by id.
 */
export type ResourceRef =
  { kind: 'page'; slug: string } | { kind: 'file'; fileId: string } | { kind: 'task'; taskId: string };

const prefixes = { page: 'svc://brain/pages/', file: 'svc://files/', task: 'svc://tasks/' } as const;

export function resourceUri(ref: ResourceRef): string {
  switch (ref.kind) {
    case 'page':
      return prefixes.page + encodeURIComponent(ref.slug);
    case 'file':
      return prefixes.file + encodeURIComponent(ref.fileId);
    case 'task':
      return prefixes.task + encodeURIComponent(ref.taskId);
    default: {
      const never: never = ref;
      throw new Error(`unknown resource ${String(never)}`);
    }
  }
}

/** The thing a URI names, or undefined when it is none of ours (answered -32002 with the URI). */
export function parseResourceUri(uri: string): ResourceRef | undefined {
  for (const kind of ['page', 'file', 'task'] as const) {
    if (!uri.startsWith(prefixes[kind])) continue;
    const rest = uri.slice(prefixes[kind].length);
    if (rest === '' || rest.includes('/') || rest.length > 300) return undefined;
    let value: string;
    try {
      value = decodeURIComponent(rest);
    } catch {
      return undefined;
    }
    if (kind === 'page') return { kind, slug: value };
    return kind === 'file' ? { kind, fileId: value } : { kind, taskId: value };
  }
  return undefined;
}

/** resources/templates/list: one RFC 6570 template per kind; completion fills their variables. */
export const resourceTemplates = [
  {
    uriTemplate: 'svc://brain/pages/{slug}',
    name: 'brain-page',
    title: 'Brain page',
    description:
      'A page of the workspace brain, as markdown. Private pages are readable by their member only.',
    mimeType: 'text/markdown',
    icons: icons.page,
  },
  {
    uriTemplate: 'svc://files/{fileId}',
    name: 'file',
    title: 'File',
    description:
      'A workspace file: pages and decks as markdown, sheets as CSV, other files up to 1 MiB as ' +
      'base64 blobs, larger ones as a link to their download (text/uri-list).',
    icons: icons.file,
  },
  {
    uriTemplate: 'svc://tasks/{taskId}',
    name: 'task',
    title: 'Task transcript',
    description:
      "A task's messages in order as markdown, and its latest state as JSON. Subscribe with " +
      'subscriptions/listen (2026-07-28) to hear of each reply.',
    mimeType: 'text/markdown',
    icons: icons.task,
  },
] as const;

/** The template variable each kind is completed by. */
export const templateVariables: Record<string, { kind: ResourceRef['kind']; variable: string }> = {
  'svc://brain/pages/{slug}': { kind: 'page', variable: 'slug' },
  'svc://files/{fileId}': { kind: 'file', variable: 'fileId' },
  'svc://tasks/{taskId}': { kind: 'task', variable: 'taskId' },
};
