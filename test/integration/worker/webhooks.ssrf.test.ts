import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { listDeliveryAttempts, listEndpointDeliveries } from '../../../shared/db/queries/webhooks.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { webhookDeliver } from '../../../worker/tasks/webhook__deliver.ts';
import type { TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback, type LoopbackServer } from '../../helpers/loopbackServer.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let worker: StandaloneWorker;
let server: LoopbackServer;

beforeAll(async () => {
  // No WEBHOOK_ALLOW_PRIVATE: the production default.
  ({ t, tenant } = await contextWithTenant());
  server = await listenOnLoopback((_req, res) => res.end('should never be reached'));
  worker = await startStandaloneWorker(t, (ctx) => ({
    webhook__deliver: webhookDeliver(ctx, { retryDelaysMs: [100, 100], timeoutMs: 1000 }),
  }));
});
afterAll(async () => {
  await worker.stop();
  await server.close();
  await t.close();
});

describe('webhook SSRF protection', () => {
  it('refuses loopback and private targets, by name after DNS or as literals, without retrying', async () => {
    expect(t.config.webhookAllowPrivate).toBe(false);
    const { port } = server;
    const urls = [
      `http://localhost:${port}/hook`, // a name: refused after resolution
      `http://127.0.0.1:${port}/hook`,
      `http://0x7f000001:${port}/hook`, // the URL parser turns this into 127.0.0.1
      `http://[::1]:${port}/hook`,
      `http://[::ffff:127.0.0.1]:${port}/hook`,
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.1/hook',
      'http://192.168.1.1/hook',
    ];
    const endpoints = [];
    for (const url of urls) {
      endpoints.push(await addWebhookEndpoint(t.deps.pool, tenant, url, ['job.succeeded']));
    }
    await t.deps.pool.transaction((tx) =>
      recordEvent(tx, {
        workspaceId: tenant.workspaceId,
        projectId: tenant.projectId,
        type: 'job.succeeded',
        data: { job: { id: 'job_x', type: 'ocr.extract', status: 'succeeded', result: null } },
      }),
    );
    for (const [i, endpoint] of endpoints.entries()) {
      const [delivery] = await waitUntil(async () => {
        const rows = await listEndpointDeliveries(t.deps.pool, endpoint.id, 5);
        return rows.length === 1 && rows[0]!.status !== 'pending' ? rows : undefined;
      });
      expect({ url: urls[i], status: delivery!.status, attempts: delivery!.attempts }).toEqual({
        url: urls[i],
        status: 'failed',
        attempts: 1,
      });
      expect(delivery!.last_error).toMatch(/private, loopback or reserved address/);
      // The host as registered, never the address a name resolved to.
      expect(delivery!.last_error).toContain(`target ${new URL(urls[i]!).hostname.replace(/^\[|\]$/g, '')} `);
      const attempts = await listDeliveryAttempts(t.deps.pool, delivery!.id);
      expect(attempts).toHaveLength(1);
    }
    expect(server.requests).toBe(0);
    const [byName] = await listEndpointDeliveries(t.deps.pool, endpoints[0]!.id, 5);
    expect(byName!.last_error).not.toMatch(/127\.0\.0\.1|::1/);
  });
});
