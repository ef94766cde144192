import { Webhook } from 'standardwebhooks';

import { verifyWebhook } from '../../shared/webhooks/signing.ts';
import { listenOnLoopback, type LoopbackServer } from './loopbackServer.ts';

export type Received = {
  /** The `webhook-id` header: the event id, the same on every attempt. */
  id: string;
  body: string;
  /** The signature checked with the endpoint's secret as a receiver would. */
  valid: boolean;
  /** The answer given. */
  status: number;
  /** The Standard Webhooks headers as sent, for a receiver library to verify. */
  headers: { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string };
};

/**
 * A webhook receiver on loopback that verifies each request with `secret()` and answers what
 * `answer` says for it: `seen` is how many times that `webhook-id` had arrived before.
 */
export async function webhookReceiver(
  secret: () => string,
  answer: (r: { id: string; body: string; seen: number }) => number,
): Promise<{
  server: LoopbackServer;
  url: string;
  received: Received[];
  /** The requests with this `webhook-id`, in arrival order. */
  of(id: string): Received[];
}> {
  const received: Received[] = [];
  const of = (id: string) => received.filter((r) => r.id === id);
  const server = await listenOnLoopback((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const id = req.headers['webhook-id'] as string;
      const headers = {
        id,
        timestamp: req.headers['webhook-timestamp'] as string,
        signature: req.headers['webhook-signature'] as string,
      };
      const status = answer({ id, body, seen: of(id).length });
      received.push({
        id,
        body,
        valid: verifyWebhook(secret(), headers, body),
        status,
        headers: {
          'webhook-id': id,
          'webhook-timestamp': headers.timestamp,
          'webhook-signature': headers.signature,
        },
      });
      res.writeHead(status).end();
    });
  });
  return { server, url: `${server.origin}/hooks`, received, of };
}

/** What the standardwebhooks library (what receivers use) says of a delivery with `secret`: verified, or why not. */
export const verdict = (r: Received, secret: string) => {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return 'verified';
  } catch (error) {
    return (error as Error).message;
  }
};
