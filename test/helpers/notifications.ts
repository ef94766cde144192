import type { Channel } from '../../shared/realtime/channels.ts';
import type { NotificationHub } from '../../shared/realtime/pubsub.ts';

/**
 * Runs `change` and resolves once the hub has delivered the next notification on `channel`.
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
  const heard = new Promise<void>((resolve, reject) => {
    unsubscribe = hub.subscribe(channel, () => resolve());
    timer = setTimeout(
      () => reject(new Error(`no notification on ${channel} within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    const result = await change();
    await heard;
    return result;
  } finally {
    clearTimeout(timer);
    unsubscribe();
  }
}
