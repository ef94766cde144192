import { EventEmitter } from 'node:events';

import pg from 'pg';

import type { Logger } from '../observability/logger.ts';
import { type Channel, type ChannelPayload, parsePayload } from './channels.ts';

type Listener = (payload: never) => void;

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

  /**
   * Calls `listener` with each notification on `channel` whose payload matches the channel's schema
   * (shared/realtime/channels.ts); a payload that does not is logged and dropped, parsed once for all listeners.
   */
  subscribe<C extends Channel>(channel: C, listener: (payload: ChannelPayload<C>) => void): () => void {
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

  async notify<C extends Channel>(channel: C, payload: ChannelPayload<C>): Promise<void> {
    if (!this.client) throw new Error('notification hub is not connected');
    await this.run('select pg_notify($1, $2)', [channel, JSON.stringify(payload)]);
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
        const payload = parsePayload(msg.channel as Channel, msg.payload ?? '');
        if (payload === undefined) {
          this.logger.warn({ channel: msg.channel }, 'notification payload does not match its channel; dropped');
          return;
        }
        for (const listener of [...set]) {
          try {
            (listener as (payload: unknown) => void)(payload);
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

/** Channels whose payloads name the object they are about in `id`. */
type KeyedChannelName = { [C in Channel]: ChannelPayload<C> extends { id: string } ? C : never }[Channel];

/**
 * Dispatches a channel by its payloads' `id`, so each notification is parsed once and reaches only
 * the listeners of that id (thousands of waiters or streams per process). The channel stays
 * LISTENed once used: a LISTEN per request would cost a round trip and could miss a NOTIFY sent
 * before it took effect.
 */
export class KeyedChannel<C extends KeyedChannelName> {
  private readonly byKey = new Map<string, Set<(payload: ChannelPayload<C>) => void>>();
  private unsubscribe: (() => void) | undefined;
  private readonly hub: NotificationHub;
  private readonly channel: C;

  constructor(hub: NotificationHub, channel: C) {
    this.hub = hub;
    this.channel = channel;
  }

  on(key: string, listener: (payload: ChannelPayload<C>) => void): () => void {
    this.subscribeOnce();
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
    this.subscribeOnce();
    await this.hub.settled();
  }

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.byKey.clear();
  }

  private subscribeOnce(): void {
    this.unsubscribe ??= this.hub.subscribe(this.channel, (payload) => this.dispatch(payload));
  }

  private dispatch(payload: ChannelPayload<C>): void {
    const listeners = this.byKey.get((payload as { id: string }).id);
    if (listeners) for (const listener of [...listeners]) listener(payload);
  }
}
