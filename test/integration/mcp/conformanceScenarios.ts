/**
 * The official conformance package's server scenarios (`conformance list --server`, 0.1.16), each
 * run against our server or skipped with the reason (docs/mcp.md lists both). Most scenarios call
 * the reference server's fixture tools, resources and prompts (test_simple_text, test://static-text,
 * test_simple_prompt, …), which a real server does not have.
 */
export const runScenarios = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'prompts-list',
  'dns-rebinding-protection',
] as const;

const fixtureTool = 'calls a fixture tool of the reference server';

export const skippedScenarios: Record<string, string> = {
  'logging-set-level': 'the server declares no logging capability: it sends clients no log messages',
  'completion-complete':
    'completes the fixture prompt test_prompt_with_arguments, which we answer -32602 (unknown prompt) as the spec says; completion is tested in mcp.resources.test.ts',
  'tools-call-simple-text': fixtureTool,
  'tools-call-image': fixtureTool,
  'tools-call-audio': fixtureTool,
  'tools-call-embedded-resource': fixtureTool,
  'tools-call-mixed-content': fixtureTool,
  'tools-call-with-logging': `${fixtureTool} (and needs logging)`,
  'tools-call-error': fixtureTool,
  'tools-call-with-progress': fixtureTool,
  'tools-call-sampling': `${fixtureTool} (and needs server-to-client requests)`,
  'tools-call-elicitation': `${fixtureTool} (and needs server-to-client requests)`,
  'json-schema-2020-12': 'lists the fixture tool json_schema_2020_12_tool',
  'elicitation-sep1034-defaults': `${fixtureTool} (and needs server-to-client requests)`,
  'elicitation-sep1330-enums': `${fixtureTool} (and needs server-to-client requests)`,
  'server-sse-polling': 'needs a session id and the fixture tool test_reconnection; this server is stateless',
  'server-sse-multiple-streams': 'needs a session id (Mcp-Session-Id); this server is stateless',
  'resources-read-text': 'reads the fixture resource test://static-text',
  'resources-read-binary': 'reads the fixture resource test://static-binary',
  'resources-templates-read': 'reads the fixture template test://template/{id}/data',
  'resources-subscribe':
    'subscribes to the fixture test://watched-resource in a 2025 revision, where we answer resources/subscribe -32601 (subscriptions/listen in 2026-07-28)',
  'resources-unsubscribe': 'as resources-subscribe',
  'prompts-get-simple': 'gets the fixture prompt test_simple_prompt',
  'prompts-get-with-args': 'gets the fixture prompt test_prompt_with_arguments',
  'prompts-get-embedded-resource': 'gets the fixture prompt test_prompt_with_embedded_resource',
  'prompts-get-with-image': 'gets the fixture prompt test_prompt_with_image',
};
