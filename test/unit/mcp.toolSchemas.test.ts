import { describe, expect, it } from '@jest/globals';

import { toolsOf } from '../../api/mcp/tools.ts';
import { loadApiDocument } from '../../api/openapi/document.ts';

describe('MCP tool schemas, read from openapi.yaml', () => {
  const tools = toolsOf(loadApiDocument());

  it('gives every tool an object input and output schema without $refs or our extensions', () => {
    expect(tools.size).toBe(8);
    for (const tool of tools.values()) {
      const text = JSON.stringify(tool.definition);
      expect(text).not.toContain('$ref');
      expect(text).not.toContain('x-svc-error-code');
      expect((tool.definition.inputSchema as { type: string }).type).toBe('object');
      expect((tool.definition.outputSchema as { type: string }).type).toBe('object');
    }
  });

  it('puts path and query parameters beside the body fields', () => {
    const messages = tools.get('list_task_messages')!.definition.inputSchema as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(Object.keys(messages.properties).sort()).toEqual(['cursor', 'limit', 'taskId']);
    expect(messages.required).toEqual(['taskId']);
    const send = tools.get('send_task_message')!.definition.inputSchema as { required: string[] };
    expect(send.required).toEqual(['taskId', 'input']);
  });

  it('narrows list_projects to the projects of the key record', () => {
    const output = tools.get('list_projects')!.definition.outputSchema as { required: string[] };
    expect(output.required).toEqual(['projects']);
  });
});
