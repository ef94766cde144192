import type { Db } from '../../shared/db/sql.ts';
import type { IdempotencyStore } from '../../shared/idempotency/idempotencyStore.ts';
import type { Actor } from '../../shared/tasks/messages.ts';
import { actorOf } from '../auth/actor.ts';
import type { OperationCall, OperationFunction } from './operationCall.ts';

/** What a creating operation's work answers with: its body, and where the created thing is. */
export type Created = { body: unknown; location: string | null };

/**
 * A creating operation answered 202 Accepted: `work` runs as the call's actor, in the transaction
 * that also stores the answer under the call's Idempotency-Key (commitAnswer).
 */
export function acceptedWork(
  idempotency: IdempotencyStore,
  work: (tx: Db, actor: Actor, call: OperationCall) => Promise<Created>,
): OperationFunction {
  return async (call) => {
    const actor = actorOf(call);
    const answer = await idempotency.commitAnswer(call, 202, (tx) => work(tx, actor, call));
    return { status: 202, ...answer };
  };
}
