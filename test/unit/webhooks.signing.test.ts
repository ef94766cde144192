import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';

import {
  newWebhookSecret,
  signWebhook,
  verifyWebhook,
  webhookHeaders,
} from '../../shared/webhooks/signing.ts';

// The Standard Webhooks reference test vector (also used by the Svix libraries).
const vector = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('Standard Webhooks signing', () => {
  it('reproduces the reference test vector', () => {
    expect(signWebhook(vector.secret, vector.id, vector.timestamp, vector.body)).toBe(vector.signature);
    expect(webhookHeaders([vector.secret], vector.id, vector.timestamp, vector.body)).toEqual({
      'webhook-id': vector.id,
      'webhook-timestamp': '1614265330',
      'webhook-signature': vector.signature,
    });
  });

  it('verifies like a receiver: any listed v1 signature, body and timestamp tolerance', () => {
    const headers = { id: vector.id, timestamp: String(vector.timestamp), signature: vector.signature };
    const now = { nowSeconds: vector.timestamp + 10 };
    expect(verifyWebhook(vector.secret, headers, vector.body, now)).toBe(true);
    expect(
      verifyWebhook(
        vector.secret,
        { ...headers, signature: `v1,bm9wZQ== ${vector.signature}` },
        vector.body,
        now,
      ),
    ).toBe(true);
    expect(verifyWebhook(vector.secret, headers, `${vector.body} `, now)).toBe(false);
    expect(verifyWebhook(vector.secret, { ...headers, id: 'msg_other' }, vector.body, now)).toBe(false);
    expect(
      verifyWebhook(
        vector.secret,
        { ...headers, signature: vector.signature.replace('v1', 'v2') },
        vector.body,
        now,
      ),
    ).toBe(false);
    expect(verifyWebhook(vector.secret, headers, vector.body, { nowSeconds: vector.timestamp + 301 })).toBe(
      false,
    );
    expect(verifyWebhook(newWebhookSecret(), headers, vector.body, now)).toBe(false);
  });

  it('signs with every secret given, space-separated: the standardwebhooks library accepts either', () => {
    const [current, previous, other] = [newWebhookSecret(), newWebhookSecret(), newWebhookSecret()];
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([current, previous], vector.id, timestamp, vector.body);
    expect(headers['webhook-signature']).toBe(
      `${signWebhook(current, vector.id, timestamp, vector.body)} ${signWebhook(previous, vector.id, timestamp, vector.body)}`,
    );
    expect(new Webhook(current).verify(vector.body, headers)).toEqual({ test: 2432232314 });
    expect(new Webhook(previous).verify(vector.body, headers)).toEqual({ test: 2432232314 });
    expect(() => new Webhook(other).verify(vector.body, headers)).toThrow('No matching signature found');
  });

  it('mints secrets as whsec_ + base64 of 32 random bytes', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });
});
