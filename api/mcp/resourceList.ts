import { listVisibleBrainPages } from '../../shared/db/queries/brainPages.ts';
import { listWorkspaceFiles } from '../../shared/db/queries/files.ts';
import type { ListPage } from '../../shared/db/queries/listPage.ts';
import { listWorkspaceTasks } from '../../shared/db/queries/tasks.ts';
import { icons } from './icons.ts';
import { rpcCodes, RpcFailure } from './jsonRpc.ts';
import { allows, type MethodContext, resourceScopes } from './methodContext.ts';
import { resourceUri } from './resourceUris.ts';

const pageSize = 50;

type Listed = { at: string; id: string; resource: Record<string, unknown> };

function decodeCursor(cursor: unknown): ListPage['before'] {
  if (cursor === undefined) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && typeof id === 'string' && !Number.isNaN(Date.parse(at))) return { at, id };
  } catch {
    // Answered below, as any cursor we did not issue.
  }
  throw new RpcFailure(rpcCodes.invalidParams, 'Invalid cursor: pass nextCursor exactly as returned.');
}

const encodeCursor = (item: Listed) => Buffer.from(JSON.stringify([item.at, item.id])).toString('base64url');

type PageRow = Awaited<ReturnType<typeof listVisibleBrainPages>>[number];
type FileRow = Awaited<ReturnType<typeof listWorkspaceFiles>>[number];
type TaskRow = Awaited<ReturnType<typeof listWorkspaceTasks>>[number];

const pageEntry = (p: PageRow): Listed => ({
  at: p.cursor_at,
  id: p.id,
  resource: {
    uri: resourceUri({ kind: 'page', slug: p.slug }),
    name: p.slug,
    title: p.title,
    description: `Brain page “${p.title}”.`,
    mimeType: 'text/markdown',
    size: p.size,
    annotations: { lastModified: p.updated_at },
    icons: icons.page,
  },
});

const fileEntry = (f: FileRow): Listed => ({
  at: f.cursor_at,
  id: f.id,
  resource: {
    uri: resourceUri({ kind: 'file', fileId: f.id }),
    name: f.filename,
    title: f.filename,
    description: `File (${f.kind}, ${f.mime_type}).`,
    mimeType: f.mime_type,
    size: f.size_bytes,
    annotations: { lastModified: f.created_at },
    icons: icons.file,
  },
});

const taskEntry = (t: TaskRow): Listed => ({
  at: t.cursor_at,
  id: t.id,
  resource: {
    uri: resourceUri({ kind: 'task', taskId: t.id }),
    name: t.id,
    title: t.title,
    description: `Task “${t.title}”: its transcript and latest state.`,
    mimeType: 'text/markdown',
    annotations: { lastModified: t.updated_at },
    icons: icons.task,
  },
});

/**
 * resources/list: the brain pages, files and tasks the credential may read (resourceScopes; pages
 * by the member's visibility), newest first across the three, 50 a page. Each kind is read a page
 * after the same (created_at, id) position and the three are merged: ids never repeat across kinds,
 * so the position orders them all and the next page resumes exactly after the last one shown.
 */
export async function listResources(ctx: MethodContext, params: Record<string, unknown>) {
  const { pool } = ctx.deps;
  const { workspaceId, memberId } = ctx.principal;
  const page: ListPage = { before: decodeCursor(params.cursor), limit: pageSize + 1 };
  const may = (kind: keyof typeof resourceScopes) => allows(ctx.principal, resourceScopes[kind]);
  const [pages, files, tasks] = await Promise.all([
    may('page') ? listVisibleBrainPages(pool, { workspaceId, memberId }, page) : [],
    may('file') ? listWorkspaceFiles(pool, workspaceId, page) : [],
    may('task') ? listWorkspaceTasks(pool, workspaceId, page) : [],
  ]);
  const items: Listed[] = [...pages.map(pageEntry), ...files.map(fileEntry), ...tasks.map(taskEntry)];
  // Newest first by (created_at, id), as each list was read: the same order as its SQL.
  items.sort((a, b) => (a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1));
  const shown = items.slice(0, pageSize);
  return {
    resources: shown.map((i) => i.resource),
    ...(items.length > pageSize ? { nextCursor: encodeCursor(shown.at(-1)!) } : {}),
  };
}
