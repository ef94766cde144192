import { EventEmitter } from 'node:events';

import pg from 'pg';

import type { Logger } from './logger.ts';

type Listener = (payload: string) => void;

/**
 * One LISTEN connection per process, shared by every waiter and stream in it. Channels are LISTENed
 * while at least one listener holds them. When the connection drops, it reconnects with capped
 * backoff, re-LISTENs, and emits `reconnect`: NOTIFY is not durable, so subscribers then re-read
 * the database for anything they may have missed.
 */
export class NotificationHub {
  private client: pg.Client | undefined;
  private readonly channels = new Map<string, Set<Listener>>();
  private readonly events = new EventEmitter();
  private stopped = false;
  private connecting: Promise<void> | undefined;
  private attempt = 0;
  // pg warns on (and will refuse) overlapping queries on one client: LISTEN/UNLISTEN/NOTIFY go in turn.
  private queue: Promise<unknown> = Promise.resolve();
  private readonly connectionString: string;
  private readonly logger: Logger;

  constructor(connectionString: string, logger: Logger) {
    this.connectionString = connectionString;
    this.logger = logger;
    this.events.setMaxListeners(0);
  }

  async start(): Promise<void> {
    await this.connect();
  }

  /** The backend pid of the listening connection (tests terminate it to prove recovery). */
  get backendPid(): number | undefined {
    return (this.client as unknown as { processID?: number } | undefined)?.processID;
  }

  get isConnected(): boolean {
    return this.client !== undefined;
  }

  subscribe(channel: string, listener: Listener): () => void {
    let set = this.channels.get(channel);
    if (!set) {
      set = new Set();
      this.channels.set(channel, set);
      this.run(`listen ${pg.escapeIdentifier(channel)}`).catch((error: unknown) => {
        this.logger.warn({ err: error, channel }, 'listen failed; will re-listen on reconnect');
      });
    }
    set.add(listener);
    return () => {
      const current = this.channels.get(channel);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        this.channels.delete(channel);
        this.run(`unlisten ${pg.escapeIdentifier(channel)}`).catch(() => {});
      }
    };
  }

  /** Called after every reconnect, once the channels are listened again. */
  onReconnect(listener: () => void): () => void {
    this.events.on('reconnect', listener);
    return () => this.events.off('reconnect', listener);
  }

  async notify(channel: string, payload: string): Promise<void> {
    if (!this.client) throw new Error('notification hub is not connected');
    await this.run('select pg_notify($1, $2)', [channel, payload]);
  }

  /** Resolves once every LISTEN/UNLISTEN issued so far has been answered. */
  async settled(): Promise<void> {
    await this.queue.catch(() => {});
  }

  private run(text: string, values?: unknown[]): Promise<unknown> {
    const next = this.queue.catch(() => {}).then(() => this.client?.query(text, values));
    this.queue = next;
    return next;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const client = this.client;
    this.client = undefined;
    // The connection may already be gone; either way it is no longer ours.
    await client?.end().catch(() => {});
  }

  private connect(): Promise<void> {
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.connectionString, keepAlive: true });
      client.on('notification', (msg) => {
        const set = this.channels.get(msg.channel);
        if (!set) return;
        for (const listener of [...set]) {
          try {
            listener(msg.payload ?? '');
          } catch (error) {
            this.logger.error({ err: error, channel: msg.channel }, 'notification listener threw');
          }
        }
      });
      client.on('error', (error) => this.lost(client, error));
      client.on('end', () => this.lost(client, new Error('listen connection ended')));
      await client.connect();
      for (const channel of this.channels.keys()) {
        await client.query(`listen ${pg.escapeIdentifier(channel)}`);
      }
      this.client = client;
      this.queue = Promise.resolve();
      this.attempt = 0;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    this.logger.warn({ err: error }, 'listen connection lost; reconnecting');
    client.end().catch(() => {});
    void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    while (!this.stopped) {
      // Capped exponential backoff: 50 ms, 100 ms, ... up to 5 s between attempts.
      const delay = Math.min(5000, 50 * 2 ** this.attempt++);
      await new Promise((r) => setTimeout(r, delay));
      if (this.stopped) return;
      try {
        await this.connect();
        this.events.emit('reconnect');
        return;
      } catch (error) {
        this.logger.warn({ err: error, delay }, 'listen reconnect failed');
      }
    }
  }
}

/**
 * Dispatches a channel whose payloads are JSON objects by one key field, so each notification is
 * parsed once and reaches only the waiters of that id (thousands of streams per process). The channel
 * stays LISTENed once used: a LISTEN per request would cost a round trip and could miss a NOTIFY
 * sent before it took effect.
 */
export class KeyedChannel<T extends Record<string, unknown>> {
  private readonly byKey = new Map<string, Set<(payload: T) => void>>();
  private unsubscribe: (() => void) | undefined;
  private readonly hub: NotificationHub;
  private readonly channel: string;
  private readonly keyField: keyof T & string;

  constructor(hub: NotificationHub, channel: string, keyField: keyof T & string) {
    this.hub = hub;
    this.channel = channel;
    this.keyField = keyField;
  }

  on(key: string, listener: (payload: T) => void): () => void {
    if (!this.unsubscribe) {
      this.unsubscribe = this.hub.subscribe(this.channel, (raw) => this.dispatch(raw));
    }
    let set = this.byKey.get(key);
    if (!set) {
      set = new Set();
      this.byKey.set(key, set);
    }
    set.add(listener);
    return () => {
      const current = this.byKey.get(key);
      current?.delete(listener);
      if (current?.size === 0) this.byKey.delete(key);
    };
  }

  /** LISTENs now, so the first `on` cannot miss a notification sent right after it. */
  async listen(): Promise<void> {
    this.unsubscribe ??= this.hub.subscribe(this.channel, (raw) => this.dispatch(raw));
    await this.hub.settled();
  }

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.byKey.clear();
  }

  private dispatch(raw: string): void {
    let payload: T;
    try {
      payload = JSON.parse(raw) as T;
    } catch {
      return;
    }
    const key = payload[this.keyField];
    if (typeof key !== 'string') return;
    for (const listener of [...(this.byKey.get(key) ?? [])]) listener(payload);
  }
}
