import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';

import { makePool } from '../../../shared/db/pool.ts';
import { sql } from '../../../shared/db/sql.ts';
import { randomBase62 } from '../../../shared/primitives/ids.ts';
import { graphileLogger } from '../../../worker/graphileLogger.ts';
import { adminQuery, createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';
import { capturingLogger } from '../../helpers/logCapture.ts';
import { secretSamples } from '../../helpers/secretSamples.ts';

// A role of its own, so its name and password are strings no log line has any other reason to hold.
const role = `svc_log_${randomBase62(8).toLowerCase()}`;
const password = `pw-${randomBase62(24)}`;
let database: { name: string; url: string };
let connectionString: string;

beforeAll(async () => {
  database = await createTestDatabase();
  await adminQuery(`create role ${role} login password '${password}'`);
  const url = new URL(database.url);
  url.username = role;
  url.password = password;
  connectionString = url.toString();
  const owner = new pg.Client({ connectionString: database.url });
  await owner.connect();
  await owner.query(`create table log_secrets (value text primary key); grant all on log_secrets to ${role}`);
  await owner.end();
});
afterAll(async () => {
  await dropTestDatabase(database.name);
  await adminQuery(`drop role if exists ${role}`);
});

const allowedErrorKeys = [
  'type',
  'message',
  'stack',
  'code',
  'errno',
  'syscall',
  'severity',
  'schema',
  'table',
  'column',
  'constraint',
  'status',
  'errors',
  'cause',
];

/** Every serialized error in a line (top level and along its cause chain) has only the safe fields. */
function expectOnlySafeFields(error: unknown): void {
  if (typeof error !== 'object' || error === null) return;
  const record = error as Record<string, unknown>;
  for (const key of Object.keys(record)) expect(allowedErrorKeys).toContain(key);
  expectOnlySafeFields(record.cause);
  for (const member of (record.errors as unknown[] | undefined) ?? []) expectOnlySafeFields(member);
}

describe('errors in logs', () => {
  it('never carry a pg client, a connection string, a password or a key, whatever the error holds', async () => {
    const s3Secret = `s3-secret-${randomBase62(30)}`;
    const liveKey = `svc_sk_live_${randomBase62(33)}`;
    const accessToken = `svc_at_${randomBase62(33)}`;
    const { logger, lines } = capturingLogger({ secrets: [s3Secret] });

    // 1. An error carrying a connected pg client, as pool and driver errors can.
    const client = new pg.Client({ connectionString });
    await client.connect();
    logger.error({ err: Object.assign(new Error('query failed'), { client }) }, 'driver error');

    // 2. A real slonik error (a unique violation: its cause is the pg error, its query holds the
    // values), with the connection string added to its text the way connection failures name their target.
    const pool = await makePool(connectionString, { maxPoolSize: 1 });
    await pool.query(sql.typeAlias('void')`insert into log_secrets values (${password})`);
    const caught = await pool.query(sql.typeAlias('void')`insert into log_secrets values (${password})`).then(
      () => undefined,
      (error: unknown) => error as Error & { context?: Error },
    );
    // Under jest the driver's error comes from another realm, so the EventEmitter slonik raises it
    // through wraps it (ERR_UNHANDLED_ERROR, original in `context`); plain Node throws it as is.
    const violation = caught?.context ?? caught;
    expect(violation?.constructor.name).toBe('UniqueIntegrityConstraintViolationError');
    violation!.message += ` (connecting to ${connectionString})`;
    logger.warn({ err: violation }, 'shutdown error');
    logger.error(violation!);

    // 3. Secrets in the texts of errors, causes, aggregated errors and the message itself.
    const cause = new Error(`upstream said: Authorization: Bearer ${accessToken}`);
    const aggregate = new AggregateError(
      [new Error(`connect ECONNREFUSED ${connectionString}`), new Error(`host=db password=${password}`)],
      'connection failed',
    );
    logger.error(
      {
        err: new Error(`presigned https://s3.example/b/k?X-Amz-Signature=abc123def&x=1 secret ${s3Secret}`, {
          cause,
        }),
        error: aggregate,
        other: new Error(`key ${liveKey} rejected`),
        target: connectionString,
      },
      `request with ${liveKey} to ${connectionString} failed`,
    );

    // 4. graphile-worker's own log calls, through our adapter.
    const graphile = graphileLogger(logger).scope({ label: 'worker' });
    graphile.error(`Failed to connect to ${connectionString}`, {
      error: Object.assign(new Error('Connection terminated'), { client }),
    });

    await client.end();
    await pool.end();

    const text = lines.join('\n');
    for (const secret of [password, connectionString, role, s3Secret, liveKey, accessToken, 'abc123def']) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toContain('connectionParameters');
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed).toHaveLength(5);
    for (const line of parsed) {
      for (const key of ['err', 'error', 'other']) expectOnlySafeFields(line[key]);
    }
    // What identifies the failure is kept.
    expect(parsed[1]).toMatchObject({
      msg: 'shutdown error',
      err: {
        type: 'UniqueIntegrityConstraintViolationError',
        constraint: 'log_secrets_pkey',
        cause: { code: '23505', table: 'log_secrets' },
      },
    });
    expect(parsed[2]).toMatchObject({ err: { type: 'UniqueIntegrityConstraintViolationError' } });
    expect(parsed[2]!.msg).toMatch(/connecting to postgres:\/\/\[redacted\]@127\.0\.0\.1/);
    expect(parsed[3]).toMatchObject({
      err: { message: expect.stringContaining('X-Amz-Signature=[redacted]'), cause: { type: 'Error' } },
      error: { type: 'AggregateError', errors: [{ message: expect.stringContaining('ECONNREFUSED') }, {}] },
      other: { message: expect.stringContaining('svc_sk_[redacted]') },
    });
    expect(parsed[4]).toMatchObject({
      scope: { label: 'worker' },
      error: { message: 'Connection terminated' },
    });
  });

  // Each format alone in its text, so each is caught by its own pattern or not at all; in every
  // place a line carries text: its message, an error's message and cause, a string field.
  for (const sample of secretSamples()) {
    it(`mask ${sample.name} wherever it stands in a line`, () => {
      const { logger, lines } = capturingLogger();
      logger.error(
        {
          err: new Error(`upstream refused ${sample.text}`, { cause: new Error(`sent ${sample.text}`) }),
          detail: `retrying with ${sample.text}`,
        },
        `call with ${sample.text} failed`,
      );
      logger.warn(new Error(`${sample.text} was rejected`));
      graphileLogger(logger).error(`Failed task: ${sample.text}`, { error: new Error(sample.text) });
      expect(lines).toHaveLength(3);
      for (const line of lines) expect(line).not.toContain(sample.secret);
      expect(lines.join('\n')).toContain('[redacted]');
    });
  }
});
