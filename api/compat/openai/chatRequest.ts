import type { ModelRoute } from '../../../shared/config/modelRoutes.ts';
import { AppError, type Issue } from '../../../shared/errors/appError.ts';
import {
  defaultMaxTokens,
  maxTokensCeiling,
  type TextJobInput,
} from '../../../shared/jobs/generationInputs.ts';
import type { ChatMessage, ToolCall } from '../../../shared/providers/types.ts';

type ContentPart = { type: string; text?: unknown };

export type OpenAiMessage = {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
};

/** The chat completion request, as the OpenAPI document lets it through (unknown fields are ignored). */
export type ChatBody = {
  model: string;
  messages: OpenAiMessage[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  user?: string;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  response_format?: { type: string };
  tools?: unknown[];
  tool_choice?: unknown;
};

/** A message's text: a string, or its text parts joined (other parts, images and audio, are refused). */
function textOf(message: OpenAiMessage, i: number, issues: Issue[]): string {
  const { content } = message;
  if (content === undefined || content === null) {
    if (message.role !== 'assistant' || !message.tool_calls?.length) {
      issues.push({ path: `messages.${i}.content`, message: 'is required' });
    }
    return '';
  }
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    issues.push({ path: `messages.${i}.content`, message: 'must be a string or an array of text parts' });
    return '';
  }
  return content
    .map((part, j) => {
      if (part?.type === 'text' && typeof part.text === 'string') return part.text;
      issues.push({ path: `messages.${i}.content.${j}`, message: 'only text parts are accepted' });
      return '';
    })
    .join('\n');
}

/** What of the request needs a route of OpenAI-compatible providers, by the field that asks for it. */
function passThroughFields(body: ChatBody): string[] {
  return [
    ...(body.tools?.length ? ['tools'] : []),
    ...(body.tool_choice !== undefined && body.tool_choice !== 'none' ? ['tool_choice'] : []),
    ...(body.response_format && body.response_format.type !== 'text' ? ['response_format'] : []),
    ...(body.messages.some((m) => m.role === 'tool' || m.tool_calls?.length) ? ['messages'] : []),
  ];
}

/**
 * The text job of a chat completion: its conversation (a developer turn is a system turn), output
 * budget and options, on the route its model chose. Tools, a response format and tool turns are
 * passed through only to a route whose every entry speaks OpenAI's protocol (`passThrough`): any
 * other provider could answer without them, which would be a different answer, so they are refused;
 * so are `temperature` and `top_p` on a route with an Anthropic entry (`viaAnthropic`).
 * @throws AppError invalid_request_body naming the field.
 */
export function chatJobInput(
  body: ChatBody,
  route: ModelRoute,
  passThrough: boolean,
  stream: boolean,
  viaAnthropic = false,
): TextJobInput {
  const issues: Issue[] = [];
  const messages: ChatMessage[] = body.messages.map((m, i) => {
    const content = textOf(m, i, issues);
    if (m.role === 'tool') {
      if (!m.tool_call_id) issues.push({ path: `messages.${i}.tool_call_id`, message: 'is required' });
      return { role: 'tool', content, toolCallId: m.tool_call_id };
    }
    const role = m.role === 'developer' ? 'system' : m.role;
    return {
      role,
      content,
      ...(m.role === 'assistant' && m.tool_calls?.length ? { toolCalls: m.tool_calls } : {}),
    };
  });
  if (!passThrough) {
    for (const field of passThroughFields(body)) {
      issues.push({
        path: field,
        message: `the route of model '${route.name}' has a provider that cannot take tools or response formats`,
      });
    }
  }
  // The platform calls Anthropic at API version 2026-10-21, which refuses sampling parameters: they
  // could only be dropped there, which would be a different answer from the one asked for.
  if (viaAnthropic) {
    for (const field of ['temperature', 'top_p'] as const) {
      if (body[field] === undefined || body[field] === null) continue;
      issues.push({ path: field, message: `the route of model '${route.name}' has a provider without it` });
    }
  }
  if (issues.length > 0) {
    throw new AppError('invalid_request_body', 'The request cannot be served as sent.', { issues });
  }
  const requested = body.max_completion_tokens ?? body.max_tokens ?? defaultMaxTokens;
  const options = {
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop: typeof body.stop === 'string' ? [body.stop] : (body.stop ?? undefined),
    user: body.user,
    tools: body.tools?.length ? body.tools : undefined,
    toolChoice: body.tools?.length ? body.tool_choice : undefined,
    responseFormat: body.response_format?.type === 'text' ? undefined : body.response_format,
  };
  return {
    // What the offline stand-ins and a log reader take as "the prompt": the last user turn.
    prompt: messages.filter((m) => m.role === 'user').at(-1)?.content ?? '',
    maxTokens: Math.min(requested, maxTokensCeiling),
    stream,
    ...(route.name === 'default' ? {} : { route: route.name }),
    messages,
    options: Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
  };
}
