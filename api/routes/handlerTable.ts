import type { RequestHandler } from 'express';

/** operationId (openapi.yaml) → handler. Each capability's module adds its operations here. */
export type HandlerTable = Record<string, RequestHandler>;
