import type { DatabasePool } from 'slonik';

import {
  listRepliesAfter,
  listRepliesAfterEach,
  type TaskMessageRow,
} from '../../shared/db/queries/taskMessages.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import type { ChannelPayload } from '../../shared/realtime/channels.ts';
import type { NotificationHub } from '../../shared/realtime/pubsub.ts';


/**
 * A reply read once for every stream of its task. `event` is the stream's rendering of it, made by
 * the first stream that sends it and reused by the others (its cursor's HMAC is computed once).
 */
export type FeedReply = { readonly row: TaskMessageRow; event?: string };

export type ReplySubscriber = {
  /** Number of the last reply this subscriber has; advanced by `deliver`. */
  after: number;
  /**
   * Set by the subscriber when it cannot take more (its reader does not keep up): it is passed over
   * until `resume`, which reads from its cursor again. Replies are never held for it meanwhile.
   */
  paused?: boolean;
  /**
   * Receives replies numbered above `after`, oldest first. It may stop part-way (and pause): the
   * rest is read again from `after` on resume. Must not throw.
   */
  deliver(replies: readonly FeedReply[]): void;
};

type TaskEntry = { subscribers: Set<ReplySubscriber>; fetching: boolean; again: boolean };

/** The cursor a read starts from: the lowest of the subscribers that can take replies now. */
function lowestCursor(entry: TaskEntry): number {
  let lowest = Number.MAX_SAFE_INTEGER;
  for (const subscriber of entry.subscribers) {
    if (!subscriber.paused && subscriber.after < lowest) lowest = subscriber.after;
  }
  return lowest;
}

// One page per fetch; a subscriber far behind catches up page by page.
const pageSize = 100;
// After a failed read, try again this much later (the subscribers stay open).
const retryAfterFailureMs = 1000;
// Tasks read by one statement at most (a burst of notifications, or every task after a reconnect).
const batchSize = 500;

/**
 * The api process's fan-out of assistant replies to its open task streams. It holds one
 * subscription on the process's single LISTEN connection (NotificationHub) for the whole process,
 * and per task one set of subscribers. A notification for a followed task triggers one read of the
 * replies after the lowest cursor among that task's subscribers, however many streams follow it;
 * reads requested in the same tick share one statement, and reads of a task never overlap (a
 * notification during a read schedules one more). Streams hold no database connection and there is
 * no polling: the database is read on notification, on subscribe (to catch up from a cursor), when a
 * stream paused by a slow reader resumes (from its cursor: nothing is queued for it while paused) and
 * after the LISTEN connection comes back (NOTIFY is not durable).
 */
export class TaskReplyFeed {
  private readonly tasks = new Map<string, TaskEntry>();
  private readonly pending = new Set<string>();
  private flushScheduled = false;
  private readonly pool: DatabasePool;
  private readonly logger: Logger;

  constructor(pool: DatabasePool, hub: NotificationHub, logger: Logger) {
    this.pool = pool;
    this.logger = logger;
    // Listened for the process's lifetime, so the LISTEN is in place before the first stream opens.
    hub.subscribe('tasks:message', (notice) => this.onNotification(notice));
    hub.onReconnect(() => this.refreshAll());
  }

  /** How many tasks and streams this process follows (bench and diagnostics). */
  get size(): { tasks: number; subscribers: number } {
    let subscribers = 0;
    for (const entry of this.tasks.values()) subscribers += entry.subscribers.size;
    return { tasks: this.tasks.size, subscribers };
  }

  /** How many of this process's streams are paused by a reader that does not keep up (diagnostics). */
  get paused(): number {
    let paused = 0;
    for (const entry of this.tasks.values()) {
      for (const subscriber of entry.subscribers) if (subscriber.paused) paused++;
    }
    return paused;
  }

  /**
   * Follows a task's replies after `subscriber.after`, reading once at once to catch up with
   * anything committed before the subscription. Returns the unsubscribe function.
   */
  subscribe(taskId: string, subscriber: ReplySubscriber): () => void {
    let entry = this.tasks.get(taskId);
    if (!entry) {
      entry = { subscribers: new Set(), fetching: false, again: false };
      this.tasks.set(taskId, entry);
    }
    entry.subscribers.add(subscriber);
    this.refresh(taskId);
    return () => {
      const current = this.tasks.get(taskId);
      if (!current) return;
      current.subscribers.delete(subscriber);
      if (current.subscribers.size === 0 && !current.fetching) this.tasks.delete(taskId);
    };
  }

  /**
   * Takes a paused subscriber back: the replies after its cursor are read again, with the next read
   * of its task (so nothing was buffered for it while it was paused, and nothing is lost).
   */
  resume(taskId: string, subscriber: ReplySubscriber): void {
    subscriber.paused = false;
    this.refresh(taskId);
  }

  private onNotification(notice: ChannelPayload<'tasks:message'>): void {
    if (notice.role !== 'assistant') return;
    const entry = this.tasks.get(notice.id);
    // Every stream of the task already has this reply (a catch-up read got there first).
    if (!entry || notice.seq <= lowestCursor(entry)) return;
    this.refresh(notice.id);
  }

  /**
   * Schedules a read of a task's replies. Reads requested in the same tick (a burst of notifications
   * arrives in one socket read) are made by one statement for all their tasks.
   */
  private refresh(taskId: string): void {
    const entry = this.tasks.get(taskId);
    if (!entry) return;
    if (entry.fetching) {
      entry.again = true;
      return;
    }
    this.pending.add(taskId);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch: [string, TaskEntry][] = [];
    for (const taskId of this.pending) {
      const entry = this.tasks.get(taskId);
      if (!entry) continue;
      if (entry.fetching) {
        entry.again = true;
      } else if (entry.subscribers.size === 0) {
        this.tasks.delete(taskId);
      } else {
        entry.fetching = true;
        entry.again = false;
        batch.push([taskId, entry]);
      }
    }
    this.pending.clear();
    for (let i = 0; i < batch.length; i += batchSize) void this.read(batch.slice(i, i + batchSize));
  }

  private async read(batch: [string, TaskEntry][]): Promise<void> {
    try {
      const [first] = batch;
      // Where each task's read starts: a subscriber resumed while it runs may be behind it.
      const from = new Map(batch.map(([taskId, entry]) => [taskId, lowestCursor(entry)]));
      const rows =
        batch.length === 1
          ? await listRepliesAfter(this.pool, first![0], from.get(first![0])!, pageSize)
          : await listRepliesAfterEach(
              this.pool,
              batch.map(([taskId]) => ({ taskId, afterSeq: from.get(taskId)! })),
              pageSize,
            );
      const byTask = Map.groupBy(
        rows.map((row): FeedReply => ({ row })),
        (r) => r.row.task_id,
      );
      for (const [taskId, entry] of batch) {
        const taskRows = byTask.get(taskId) ?? [];
        this.dispatch(entry, taskRows, from.get(taskId)!);
        // A full page means there may be more: keep reading until caught up.
        if (taskRows.length === pageSize) entry.again = true;
      }
    } catch (error) {
      this.logger.warn({ err: error, tasks: batch.length }, 'reading task replies failed; retrying');
      for (const [taskId] of batch) setTimeout(() => this.refresh(taskId), retryAfterFailureMs).unref();
    } finally {
      for (const [taskId, entry] of batch) {
        entry.fetching = false;
        if (entry.again) this.refresh(taskId);
        else if (entry.subscribers.size === 0) this.tasks.delete(taskId);
      }
    }
  }

  /**
   * Hands `replies` (those after `from`) to the subscribers that can take them. One behind `from`
   * (resumed during the read) would see a gap: it waits for the next read, made from its cursor.
   */
  private dispatch(entry: TaskEntry, replies: readonly FeedReply[], from: number): void {
    for (const subscriber of [...entry.subscribers]) {
      if (subscriber.paused) continue;
      if (subscriber.after < from) {
        entry.again = true;
        continue;
      }
      if (replies.length === 0) continue;
      const fresh = replies.filter((r) => r.row.seq > subscriber.after);
      if (fresh.length === 0) continue;
      try {
        subscriber.deliver(fresh);
      } catch (error) {
        this.logger.error({ err: error }, 'task stream subscriber threw');
      }
    }
  }

  /** After the LISTEN connection came back: read every followed task again (batched like any refresh). */
  private refreshAll(): void {
    for (const taskId of this.tasks.keys()) this.refresh(taskId);
  }
}
