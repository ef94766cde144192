import type { ModelRoute } from '../../../shared/config/modelRoutes.ts';
import type { ProvidersConfig } from '../../../shared/config/providersConfig.ts';
import { AppError, type Issue } from '../../../shared/errors/appError.ts';
import { maxTokensCeiling, type TextJobInput } from '../../../shared/jobs/generationInputs.ts';
import type { ChatMessage } from '../../../shared/providers/types.ts';
import { routeHas } from '../modelChoice.ts';

type Block = { type?: unknown; text?: unknown };

export type AnthropicMessage = { role: 'user' | 'assistant'; content: string | Block[] };

/** What count_tokens reads: the prompt, and the fields that would make its count differ. */
export type PromptBody = {
  model: string;
  messages: AnthropicMessage[];
  system?: string | Block[];
  tools?: unknown[];
  tool_choice?: unknown;
  thinking?: { type?: unknown };
  mcp_servers?: unknown[];
};

/** The Messages request, as the OpenAPI document lets it through (unknown fields are ignored). */
export type MessagesBody = PromptBody & {
  max_tokens: number;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
  stream?: boolean;
};

// OpenAI's protocol takes at most four stop sequences; Anthropic's more.
const openAiMaxStops = 4;

/** Text blocks joined (cache_control and citations settings change nothing here); other blocks are refused. */
function textOf(content: string | Block[], path: string, issues: Issue[]): string {
  if (typeof content === 'string') return content;
  return content
    .map((block, j) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      issues.push({ path: `${path}.${j}`, message: 'only text blocks are accepted' });
      return '';
    })
    .join('\n');
}

/** What the platform does not do on this API (tools, extended thinking, MCP servers), by field. */
function unsupported(body: PromptBody): Issue[] {
  const thinking = body.thinking?.type;
  return [
    ...(body.tools?.length ? [{ path: 'tools', message: 'tools are not supported' }] : []),
    ...(body.tool_choice !== undefined ? [{ path: 'tool_choice', message: 'tools are not supported' }] : []),
    ...(thinking !== undefined && thinking !== 'disabled'
      ? [{ path: 'thinking', message: 'extended thinking is not supported' }]
      : []),
    ...(body.mcp_servers?.length ? [{ path: 'mcp_servers', message: 'MCP servers are not supported' }] : []),
  ];
}

/**
 * The conversation of a Messages request as the platform's chat messages: the system prompt (a
 * string or text blocks) first, then the turns, each a string or text blocks.
 * @throws AppError invalid_request_body naming every block or field it cannot serve.
 */
export function promptMessages(body: PromptBody): ChatMessage[] {
  const issues = unsupported(body);
  const system = body.system === undefined ? '' : textOf(body.system, 'system', issues);
  const turns = body.messages.map((m, i): ChatMessage => ({
    role: m.role,
    content: textOf(m.content, `messages.${i}.content`, issues),
  }));
  if (issues.length > 0) {
    throw new AppError('invalid_request_body', 'The request cannot be served as sent.', { issues });
  }
  return system === '' ? turns : [{ role: 'system', content: system }, ...turns];
}

/** Anthropic's API version without sampling parameters (its SDKs from 1.0 send it). */
export const versionWithoutSampling = '2026-10-21';

/**
 * The sampling parameters a request may not carry, by field: none from a caller of API version
 * 2026-10-21 on (Anthropic answers them 400), top_k ever (no provider behind the platform takes
 * it: OpenAI's protocol has none, and the platform calls Anthropic at 2026-10-21), temperature and
 * top_p on a route with an Anthropic entry (for the same reason). Refused, not silently dropped.
 */
function samplingIssues(
  body: MessagesBody,
  route: ModelRoute,
  providers: ProvidersConfig,
  version: string | undefined,
): Issue[] {
  const sent = (['temperature', 'top_p', 'top_k'] as const).filter((f) => body[f] !== undefined);
  const modern = version !== undefined && version >= versionWithoutSampling;
  const viaAnthropic = routeHas(providers, route, 'anthropic');
  return sent.flatMap((field) => {
    if (modern) return [{ path: field, message: `is not part of API version ${version}` }];
    if (field === 'top_k') return [{ path: field, message: 'is not supported' }];
    if (viaAnthropic) {
      return [{ path: field, message: `the route of model '${route.name}' has a provider without it` }];
    }
    return [];
  });
}

/**
 * The text job of a Messages request on the route its model chose: its conversation, output budget
 * and options. What one of the route's providers could not honour is refused rather than silently
 * dropped there: sampling parameters (samplingIssues), more than four stop sequences on a route with
 * an OpenAI-compatible entry. `version` is the caller's anthropic-version header.
 * @throws AppError invalid_request_body naming the field.
 */
export function messagesJobInput(
  body: MessagesBody,
  route: ModelRoute,
  providers: ProvidersConfig,
  version: string | undefined,
): TextJobInput {
  const messages = promptMessages(body);
  const issues = samplingIssues(body, route, providers, version);
  if ((body.stop_sequences?.length ?? 0) > openAiMaxStops && routeHas(providers, route, 'openai')) {
    issues.push({
      path: 'stop_sequences',
      message: `the route of model '${route.name}' takes at most ${openAiMaxStops} stop sequences`,
    });
  }
  if (issues.length > 0) {
    throw new AppError('invalid_request_body', 'The request cannot be served as sent.', { issues });
  }
  const options = {
    temperature: body.temperature,
    topP: body.top_p,
    stop: body.stop_sequences?.length ? body.stop_sequences : undefined,
    user: body.metadata?.user_id ?? undefined,
  };
  return {
    // What the offline stand-ins and a log reader take as "the prompt": the last user turn.
    prompt: messages.filter((m) => m.role === 'user').at(-1)?.content ?? '',
    maxTokens: Math.min(body.max_tokens, maxTokensCeiling),
    stream: body.stream === true,
    ...(route.name === 'default' ? {} : { route: route.name }),
    messages,
    options: Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
  };
}
