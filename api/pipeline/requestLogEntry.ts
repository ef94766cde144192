import type { Principal } from '../../shared/auth/principal.ts';
import type { RequestLogEntry } from '../../shared/db/queries/requestLogs.ts';
import type { Operation } from '../openapi/document.ts';
import { redact } from '../requestLog/redact.ts';

/** What the log records of a call: an operation call, or an Express request that did not become one. */
export type LoggedCall = {
  requestId: string;
  startedAt: bigint;
  principal?: Principal;
  operation?: Operation;
  method: string;
  /** From the root, API base included, without the query. */
  fullPath: string;
  ip: string | undefined;
  body: unknown;
};

export type LoggedAnswer = {
  status: number;
  body: unknown;
  projectId?: string;
  costMinor?: number;
  /** Set by the response cache (api/http/responseCache.ts) for calls that asked for it. */
  cacheStatus?: 'hit' | 'miss';
};

/**
 * The log row of an answered API call (status, latency, cost), REST request or MCP tool call alike.
 * Bodies are kept, redacted and bounded (redact.ts), only for calls made with a credential: an
 * anonymous caller (a 401, an unknown path, /status, /openapi.json) must not be able to write what
 * it likes into a log kept 30 days.
 */
export function requestLogEntry(call: LoggedCall, answer: LoggedAnswer): RequestLogEntry {
  const principal = call.principal;
  return {
    request_id: call.requestId,
    workspace_id: principal?.workspaceId ?? null,
    project_id: answer.projectId ?? null,
    key_id: principal?.credentialId ?? null,
    oauth_app_id: principal?.oauthAppId ?? null,
    operation: call.operation?.id ?? null,
    method: call.method,
    path: call.fullPath,
    status: answer.status,
    latency_ms: Number((process.hrtime.bigint() - call.startedAt) / 1_000_000n),
    cost_minor: answer.costMinor ?? 0,
    ip: call.ip ?? null,
    request_body: principal && call.body !== undefined ? redact(call.body) : null,
    response_body: principal && answer.body !== undefined ? redact(answer.body) : null,
    created_at: new Date().toISOString(),
    cache_status: answer.cacheStatus ?? null,
  };
}
