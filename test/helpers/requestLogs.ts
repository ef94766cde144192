import { requestLogEntry } from '../../shared/db/queries/requestLogs.ts';
import { columnsOf, type Db, sql } from '../../shared/db/sql.ts';

const entryColumns = columnsOf(requestLogEntry);

/** The request log's row of the call with this x-request-id, whole as it was written, or null. */
export function loggedCall(db: Db, requestId: string) {
  return db.maybeOne(sql.type(requestLogEntry)`
    select ${entryColumns} from request_logs where request_id = ${requestId}
  `);
}
