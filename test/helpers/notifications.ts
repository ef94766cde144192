import type { Channel } from '../../shared/realtime/channels.ts';
import type { NotificationHub } from '../../shared/realtime/pubsub.ts';

/**
 * Runs `change` and resolves once the hub has delivered the next notification on `channel`, at most
 * `timeoutMs` after `change` is done (a CLI process's start-up on a busy machine is not counted).
 * NOTIFY reaches listeners after the writer's commit returns, so an api cache cleared by it may
 * still answer from the old state for a moment; tests that check the new state wait for this.
 * Listeners run in subscription order, so the app's own (subscribed at start) have already run.
 */
export async function afterNotification<T>(
  hub: NotificationHub,
  channel: Channel,
  change: () => Promise<T>,
  timeoutMs = 5_000,
): Promise<T> {
  let unsubscribe = () => {};
  let timer: NodeJS.Timeout | undefined;
  // Listening before the change: its notification cannot come before we hear.
  const heard = new Promise<void>((resolve) => {
    unsubscribe = hub.subscribe(channel, () => resolve());
  });
  try {
    const result = await change();
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no notification on ${channel} within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    await Promise.race([heard, late]);
    return result;
  } finally {
    clearTimeout(timer);
    unsubscribe();
  }
}
