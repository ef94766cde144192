import type { Request } from 'express';

import { html, type SafeHtml } from './html.ts';

/** A destructive form was sent from its confirmation page (which alone carries this field). */
export const isConfirmed = (req: Request): boolean =>
  (req.body as Record<string, unknown> | undefined)?.confirm === 'yes';

/**
 * The confirmation step of a destructive action: what will happen, in words, then one danger
 * button that posts the action with `confirm=yes`, and a way back that does nothing.
 */
export function confirmView(input: {
  heading: string;
  consequence: string;
  action: string;
  csrf: string;
  submit: string;
  cancel: string;
  fields?: SafeHtml;
}): SafeHtml {
  return html`<h1>${input.heading}</h1>
    <p class="warning">${input.consequence}</p>
    <form method="post" action="${input.action}">
      <input type="hidden" name="_csrf" value="${input.csrf}" />
      <input type="hidden" name="confirm" value="yes" />
      ${input.fields ?? ''}
      <div class="actions">
        <button type="submit" class="danger">${input.submit}</button>
        <a class="button" href="${input.cancel}">Cancel</a>
      </div>
    </form>`;
}

/** What the page a destructive action returns to says happened (fixed words, never from the URL). */
const notices = {
  'key-revoked': 'The key was revoked: calls with it now answer 401.',
  'webhook-disabled': 'The endpoint was disabled: nothing is sent to it until it is enabled again.',
  'webhook-enabled': 'The endpoint was enabled: new events are sent to it.',
  'webhook-test-sent': 'A test event was queued for this endpoint: its delivery shows below in a moment.',
  'webhook-test-too-soon':
    'No test event was sent: one went to this endpoint less than 10 seconds ago. Try again in a moment.',
  'webhook-old-secret-expired':
    'The old secret was expired: deliveries are signed with the current secret alone.',
  'delivery-resent': 'The delivery was queued again: its new attempt shows here in a moment.',
  'deliveries-resent':
    'The failed deliveries were queued again, oldest first: their new attempts show here as they are made.',
  'app-cut-off': 'The app was cut off: its access ended and its tokens no longer work.',
} as const;

export type NoticeCode = keyof typeof notices;

export const noticeHref = (path: string, code: NoticeCode) => `${path}?done=${code}`;

/** The notice a `done=` parameter names, if it names one. */
export function noticeOf(req: Request): string | undefined {
  const code = typeof req.query.done === 'string' ? req.query.done : '';
  return Object.hasOwn(notices, code) ? notices[code as NoticeCode] : undefined;
}
