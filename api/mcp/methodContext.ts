import { type Principal, scopeAllows } from '../../shared/auth/principal.ts';
import { AppError } from '../../shared/errors/appError.ts';
import type { AppDeps } from '../deps.ts';
import type { ResourceRef } from './resourceUris.ts';

/** What the MCP server's own methods (resources, prompts, completion, listen) read with. */
export type McpDeps = Pick<
  AppDeps,
  | 'doc'
  | 'pool'
  | 'objectStore'
  | 'config'
  | 'taskReplyFeed'
  | 'streamLeases'
  | 'openStreams'
  | 'shutdown'
  | 'taskStream'
>;

export type MethodContext = { deps: McpDeps; principal: Principal; stateless: boolean };

/**
 * The REST operations whose scope a kind of resource needs, so a resource is readable exactly
 * where its REST reads are: a brain page where brain search is (its only REST read), a file where
 * its record and its bytes are, a task where the task and its messages are.
 */
export const resourceScopes: Record<ResourceRef['kind'], readonly string[]> = {
  page: ['brain.search'],
  file: ['files.read', 'files.download'],
  task: ['tasks.read', 'tasks.listMessages'],
};

/** Prompts are workflows: reading one is the first half of running it. */
export const promptScopes: readonly string[] = ['workflows.run'];

/** subscriptions/listen is the task stream's twin. */
export const listenScopes: readonly string[] = ['tasks.stream'];

export function allows(principal: Principal, operations: readonly string[]): boolean {
  return operations.every((op) => scopeAllows(principal.scope, op));
}

/** @throws AppError api_key_operation_scope naming the first scope the credential lacks. */
export function requireScopes(principal: Principal, operations: readonly string[]): void {
  const missing = operations.find((op) => !scopeAllows(principal.scope, op));
  if (missing !== undefined) {
    throw new AppError('api_key_operation_scope', `This key's scope does not cover ${missing}.`);
  }
}
