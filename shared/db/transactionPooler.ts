import type { DriverClient, DriverFactory } from 'slonik';

/** How long a statement may run, and a transaction sit idle, before PostgreSQL ends it. */
export type SessionBounds = { statementTimeoutMs: number; idleInTransactionTimeoutMs: number };

// The statement slonik's transaction() opens every transaction with (nested ones use SAVEPOINT).
const transactionStart = 'START TRANSACTION';

/**
 * A slonik driver that keeps no state in the PostgreSQL session, for connections through a
 * transaction-pooling proxy (PgBouncer `pool_mode = transaction`), which hands each transaction to
 * whichever server connection is free:
 * - statement names are dropped, so every statement is parsed as the unnamed one: a named prepared
 *   statement lives in one server session, and another client reusing the name there is refused
 *   (`prepared statement "…" already exists`), or a client on another session does not find it;
 * - each transaction sets its own bounds with set_config(…, true) (SET LOCAL), which end with it:
 *   a session-level setting would be refused as a startup parameter by the pooler, or leak to
 *   other clients of that server connection.
 * The pool must be made without slonik's statementTimeout and idleInTransactionSessionTimeout (they
 * are startup parameters). Statements outside a transaction are bounded only by the role's or the
 * pooler's settings (docs/deployment.md "PgBouncer").
 */
export function transactionPoolerDriver(inner: DriverFactory, bounds: SessionBounds): DriverFactory {
  // Fixed text, no parameters: the simple protocol, one round trip, nothing prepared.
  const setBounds =
    `select set_config('statement_timeout', '${Math.trunc(bounds.statementTimeoutMs)}', true), ` +
    `set_config('idle_in_transaction_session_timeout', '${Math.trunc(bounds.idleInTransactionTimeoutMs)}', true)`;
  return async (setup) => {
    const driver = await inner(setup);
    return {
      createClient: async () => {
        const client = await driver.createClient();
        const wrapped: DriverClient = {
          ...client,
          query: async (text, values) => {
            const result = await client.query(text, values);
            if (text === transactionStart) await client.query(setBounds);
            return result;
          },
        };
        return wrapped;
      },
    };
  };
}
