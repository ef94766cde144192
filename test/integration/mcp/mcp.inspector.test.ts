import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { type BearerProxy, bearerProxy } from '../../helpers/bearerProxy.ts';
import { createTenant, insertBareTask } from '../../helpers/fixtures.ts';
import { projectRoot } from '../../helpers/processes.ts';
import { type McpServer, startMcpServer } from './mcp.helpers.ts';

const run = promisify(execFile);
// `mcp-inspector`, the Inspector's own command (its `--cli` mode starts the CLI build it ships with).
// It needs commander 13, a devDependency of ours for that alone: another dependency's commander 5
// would otherwise be the one it finds ("allowExcessArguments is not a function").
const inspector = path.join(projectRoot, 'node_modules/@modelcontextprotocol/inspector/cli/build/cli.js');

let s: McpServer;
let proxy: BearerProxy;
let workflowId: string;
let taskId: string;

/** `mcp-inspector --cli <url> --method …`, as a developer runs it: its JSON output, parsed. */
async function inspect(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(
    process.execPath,
    [inspector, '--cli', `${proxy.origin}/api/pub/v1/mcp`, '--transport', 'http', ...args],
    {
      cwd: projectRoot,
      // The Inspector starts its CLI with the `node` on PATH: ours (Node 24) first.
      env: {
        ...process.env,
        PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      },
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

beforeAll(async () => {
  s = await startMcpServer();
  const tenant = await createTenant(s.t.deps.pool);
  const wf = (await commands['workflow create']!.run(s.t.deps.pool, {
    workspace: tenant.workspaceId,
    name: 'Weekly summary',
    prompt: 'Summarise the week for {{team}}.',
    fields: JSON.stringify([{ key: 'team', type: 'text', required: true }]),
  })) as { workflow: { id: string } };
  workflowId = wf.workflow.id;
  taskId = await insertBareTask(s.t.deps.pool, tenant, 'Inspect me');
  // Inspector 0.15's CLI sends no headers of its own: the key is added in front of it.
  proxy = await bearerProxy(s.base, tenant.testKey);
});
afterAll(async () => {
  await proxy.close();
  await s.close();
});

describe('the MCP Inspector CLI', () => {
  it('lists tools, resources, templates and prompts, reads a resource and gets a prompt', async () => {
    // Six runs of the CLI side by side: each starts two Node processes.
    const [tools, resources, templates, prompts, read, prompt] = (await Promise.all([
      inspect('--method', 'tools/list'),
      inspect('--method', 'resources/list'),
      inspect('--method', 'resources/templates/list'),
      inspect('--method', 'prompts/list'),
      inspect('--method', 'resources/read', '--uri', `svc://tasks/${taskId}`),
      inspect('--method', 'prompts/get', '--prompt-name', workflowId, '--prompt-args', 'team=Support'),
    ])) as [
      { tools: { name: string }[] },
      { resources: { uri: string }[] },
      { resourceTemplates: unknown[] },
      { prompts: { name: string }[] },
      { contents: { text: string }[] },
      { messages: { content: { text: string } }[] },
    ];
    expect(tools.tools.map((t) => t.name)).toContain('create_task');
    expect(resources.resources.map((r) => r.uri)).toEqual([`svc://tasks/${taskId}`]);
    expect(templates.resourceTemplates).toHaveLength(3);
    expect(prompts.prompts.map((p) => p.name)).toEqual([workflowId]);
    expect(read.contents[0]!.text).toBe('# Inspect me');
    expect(prompt.messages[0]!.content.text).toBe('Summarise the week for Support.');
  });
});
