import type { AttachedFileRow, TaskMessageRow } from '../../../shared/db/queries/taskMessages.ts';
import type { listTaskBoard, listWorkspaceTasks } from '../../../shared/db/queries/tasks.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ConsoleContext, when } from './context.ts';
import { consoleTable } from './table.ts';

type ListedTask = Awaited<ReturnType<typeof listWorkspaceTasks>>[number];
type BoardItem = Awaited<ReturnType<typeof listTaskBoard>>[number];

/** Where a task stands, from its newest message: two tasks with one title are told apart by it. */
function taskStatus(t: ListedTask): string {
  if (t.last_status === null) return 'no messages yet';
  if (t.last_status === 'failed') return 'failed';
  return t.last_role === 'user' ? 'waiting for an answer' : 'answered';
}

export function tasksView(c: ConsoleContext, tasks: readonly ListedTask[], next: string | null): SafeHtml {
  return html`<h1>Tasks</h1>
    ${consoleTable(
      ['Title', 'Status', 'Messages', 'Created', 'Last message'],
      tasks,
      (t) =>
        html`<tr>
          <td><a href="${c.base}/tasks/${t.id}">${t.title}</a><br /><code class="muted">${t.id}</code></td>
          <td>${taskStatus(t)}</td>
          <td class="num">${t.last_message_seq}</td>
          <td class="nowrap">${when(t.created_at)}</td>
          <td class="nowrap">${when(t.last_message_at)}</td>
        </tr>`,
      {
        empty: 'No tasks yet: tasks created through the API show here.',
        olderHref: next && `${c.base}/tasks?cursor=${next}`,
        older: 'Older tasks',
      },
    )}`;
}

const size = (bytes: number | null) =>
  bytes === null
    ? ''
    : bytes < 1024 * 1024
      ? `${Math.ceil(bytes / 1024)} KB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MB`;

type Page<T> = { items: T[]; next: string | null };

/** The task's own URL with both lists' positions, one of them moved. */
function taskHref(c: ConsoleContext, taskId: string, here: Record<'board' | 'messages', string>): string {
  const query = new URLSearchParams(Object.entries(here).filter(([, v]) => v !== ''));
  const search = query.toString();
  return `${c.base}/tasks/${taskId}${search ? `?${search}` : ''}`;
}

/** The files sent with a message: each a download through the console's file path (its read rules). */
function attachedFiles(c: ConsoleContext, files: readonly AttachedFileRow[]): SafeHtml | '' {
  if (files.length === 0) return '';
  return html`<ul class="attachments" aria-label="Attached files">
    ${files.map(
      (f) =>
        html`<li data-file="${f.file_id}">
          <a href="${c.base}/files/${f.file_id}/content" download>${f.filename}</a>
          <span class="muted">${f.mime_type}, ${size(f.size_bytes)}</span>
        </li>`,
    )}
  </ul>`;
}

export function taskView(
  c: ConsoleContext,
  task: { id: string; title: string },
  here: Record<'board' | 'messages', string>,
  messages: Page<TaskMessageRow> & { files: readonly AttachedFileRow[] },
  board: Page<BoardItem>,
): SafeHtml {
  return html`<h1>${task.title}</h1>
    <h2>Media board</h2>
    ${board.items.length === 0 ? html`<p>No videos or files on this task.</p>` : ''}
    <ul class="board">
      ${board.items.map((item) =>
        item.kind === 'video'
          ? html`<li data-video="${item.id}">
              <strong>${item.title}</strong>
              <span class="muted">video, ${item.status} ${size(item.size_bytes)}</span>
              ${
                item.status === 'ready'
                  ? html`<br /><video
                        controls
                        preload="metadata"
                        width="480"
                        src="${c.base}/videos/${item.id}/file"
                      ></video>
                      <br /><a href="${c.base}/videos/${item.id}/file" download>Download</a>`
                  : ''
              }
            </li>`
          : html`<li data-file="${item.id}">
              <a href="${c.base}/files/${item.id}/content" download>${item.title}</a>
              <span class="muted">${item.mime_type} ${size(item.size_bytes)}</span>
            </li>`,
      )}
    </ul>
    ${
      board.next
        ? html`<p>
            <a href="${taskHref(c, task.id, { ...here, board: board.next })}">Older videos and files</a>
          </p>`
        : ''
    }
    <h2>Messages</h2>
    <ol class="messages">
      ${messages.items.map(
        (m) =>
          html`<li value="${m.seq}">
            <strong>${m.role}</strong>
            <span class="muted"
              >${when(m.created_at)}${m.status === 'failed' ? ` · failed (${m.error_code ?? ''})` : ''}</span
            >
            <pre>${m.text}</pre>
            ${attachedFiles(
              c,
              messages.files.filter((f) => f.message_id === m.id),
            )}
          </li>`,
      )}
    </ol>
    ${
      messages.next
        ? html`<p>
            <a href="${taskHref(c, task.id, { ...here, messages: messages.next })}">Later messages</a>
          </p>`
        : ''
    }
    <p><a href="${c.base}/tasks">Back to tasks</a></p>`;
}
