import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { type BearerProxy, bearerProxy } from '../../helpers/bearerProxy.ts';
import { createTenant, insertBareTask } from '../../helpers/fixtures.ts';
import { projectRoot } from '../../helpers/processes.ts';
import { runScenarios, skippedScenarios } from './conformanceScenarios.ts';
import { type McpServer, startMcpServer } from './mcp.helpers.ts';

const run = promisify(execFile);
const conformance = path.join(projectRoot, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

let s: McpServer;
let proxy: BearerProxy;
let output: string;

/** The conformance CLI's output; a failing run (exit code 1) is returned, not thrown, to be shown. */
async function conformanceCli(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, [conformance, ...args], {
      cwd: projectRoot,
      timeout: 60_000,
    });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: `${failed.stdout}\n${failed.stderr}` };
  }
}

beforeAll(async () => {
  // The runner knows only the forwarder that adds the key: that is the origin it sends, so the
  // server allows it as it would its own (dns-rebinding-protection checks both answers).
  const proxyPort = await freePort();
  s = await startMcpServer({ MCP_ALLOWED_ORIGINS: `http://127.0.0.1:${proxyPort}` });
  const tenant = await createTenant(s.t.deps.pool);
  // Something to list: a task, a page and a workflow (resources-list and prompts-list check each entry).
  await insertBareTask(s.t.deps.pool, tenant, 'Conformance');
  await commands['brain add-page']!.run(s.t.deps.pool, {
    workspace: tenant.workspaceId,
    title: 'Notes',
    body: 'Body.',
  });
  await commands['workflow create']!.run(s.t.deps.pool, {
    workspace: tenant.workspaceId,
    name: 'Summary',
    prompt: 'Summarise {{topic}}.',
    fields: JSON.stringify([{ key: 'topic', type: 'text', required: true }]),
  });
  proxy = await bearerProxy(s.base, tenant.testKey, proxyPort);
  output = await mkdtemp(path.join(tmpdir(), 'mcp-conformance-'));
});
afterAll(async () => {
  await proxy.close();
  await s.close();
  await rm(output, { recursive: true, force: true });
});

describe('the official MCP conformance package against the server', () => {
  it('has a decision, run or skipped with a reason, for every server scenario it lists', async () => {
    const listed = await conformanceCli('list', '--server');
    const names = [...listed.stdout.matchAll(/^\s+- ([a-z0-9-]+) \[/gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(20);
    expect(names.sort()).toEqual([...runScenarios, ...Object.keys(skippedScenarios)].sort());
  });

  it.each(runScenarios)('passes %s', async (scenario) => {
    const url = `${proxy.origin}/api/pub/v1/mcp`;
    const result = await conformanceCli('server', '--url', url, '--scenario', scenario, '-o', output);
    expect({
      code: result.code,
      summary: /Passed: (\d+)\/(\d+), 0 failed, 0 warnings/.test(result.stdout),
    }).toEqual({
      code: 0,
      summary: true,
    });
  });
});
