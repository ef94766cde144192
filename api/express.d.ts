import type { Principal } from '../shared/auth/principal.ts';
import type { IdempotencyScope } from '../shared/idempotency/idempotencyStore.ts';
import type { ErrorShaper } from './compat/compatApi.ts';
import type { Operation } from './openapi/document.ts';
import type { OperationCall } from './pipeline/operationCall.ts';

declare global {
  namespace Express {
    interface Request {
      requestId: string;
      startedAt: bigint;
      /** The operation call the pipeline built of this request (api/pipeline/restCall.ts). */
      call?: OperationCall;
      /** The OpenAPI operation this request addresses (set for every path under the API base). */
      operation?: Operation;
      principal?: Principal;
      /** The Idempotency-Key this request runs under (see IdempotencyStore). */
      idempotency?: IdempotencyScope;
    }
    interface Locals {
      costMinor?: number;
      projectId?: string;
      responseBody?: unknown;
      /** The response cache's verdict on a call that asked for it (api/http/responseCache.ts). */
      cacheStatus?: 'hit' | 'miss';
      /** Every message of this /mcp request was a tool call with its own entry: no entry of its own. */
      loggedAsToolCalls?: boolean;
      /** A compatible API's error shape, for the error middleware (api/compat/mount.ts). */
      errorShape?: ErrorShaper;
    }
  }
}
