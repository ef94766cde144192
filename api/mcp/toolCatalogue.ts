import type { icons } from './icons.ts';

/**
 * The MCP tools (DESIGN.md): each is a REST operation of the public API, named by operationId, so
 * it has that operation's scope, validation, metering and request-log entry. `pick` narrows a
 * response to the part the tool is about.
 */
export type ToolEntry = {
  name: string;
  /** Which of icons.ts's icons clients show beside it. */
  icon: keyof typeof icons;
  title: string;
  operationId: string;
  description: string;
  readOnly: boolean;
  pick?: string;
};

export const toolCatalogue: readonly ToolEntry[] = [
  {
    name: 'create_task',
    icon: 'task',
    title: 'Create a task',
    operationId: 'tasks.create',
    readOnly: false,
    description:
      'Start a task for the workspace: `input` is the request in plain words (1 to 50000 characters). ' +
      'Optionally assign it to a staff member (`staffId`, from list_staff), attach files (`fileIds`) ' +
      'or give a `title` (else one is made from the input). A key of several projects must name ' +
      '`projectId` (see list_projects). Returns the task at once; the reply arrives later as a ' +
      'message: poll get_task or list_task_messages. Replies are billed to the workspace.',
  },
  {
    name: 'get_task',
    icon: 'task',
    title: 'Read a task',
    operationId: 'tasks.read',
    readOnly: true,
    description:
      'Read one task of the workspace by `taskId` (as returned by create_task or run_workflow): ' +
      'its title, status, assignee and timestamps. Free.',
  },
  {
    name: 'list_task_messages',
    icon: 'task',
    title: 'List task messages',
    operationId: 'tasks.listMessages',
    readOnly: true,
    description:
      'The messages of a task, oldest first, `limit` per page (1 to 100, default 50). When `hasMore` ' +
      'is true, call again with `cursor` set to the returned `nextCursor`. Free.',
  },
  {
    name: 'send_task_message',
    icon: 'task',
    title: 'Send a task message',
    operationId: 'tasks.sendMessage',
    readOnly: false,
    description:
      'Add a message (`input`, 1 to 50000 characters, optional `fileIds`) to the task `taskId`; the ' +
      "assignee's reply arrives later as a new message (see list_task_messages). Billed like the REST call.",
  },
  {
    name: 'list_staff',
    icon: 'staff',
    title: 'List staff',
    operationId: 'staff.list',
    readOnly: true,
    description:
      'Every active staff member of the workspace with its id, name, role and trigger address; use ' +
      'an id as `staffId` in create_task. Free.',
  },
  {
    name: 'run_workflow',
    icon: 'workflow',
    title: 'Run a workflow',
    operationId: 'workflows.run',
    readOnly: false,
    description:
      'Run the workflow `workflowId` with `values`, an object holding a value for each of its fields; ' +
      'values that do not satisfy the field definitions fail with the offending fields named. Creates ' +
      'a task (returned) assigned to the workflow’s staff member; follow it with get_task.',
  },
  {
    name: 'list_projects',
    icon: 'project',
    title: 'List projects',
    operationId: 'platform.me',
    readOnly: true,
    pick: 'projects',
    description:
      'The projects this credential covers (id and name). When there are several, tools that create ' +
      'work need one as `projectId`. Free.',
  },
  {
    name: 'search_brain',
    icon: 'search',
    title: 'Search the brain',
    operationId: 'brain.search',
    readOnly: true,
    description:
      'Full-text search of the workspace brain (its knowledge pages) for `query` (1 to 2000 ' +
      'characters): up to 10 pages ranked by relevance, with a snippet each, limited to pages the ' +
      "credential's person may see. Free.",
  },
];
