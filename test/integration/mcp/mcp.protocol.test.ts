import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ env: { MCP_ALLOWED_ORIGINS: 'https://inspector.example' } }));
});
afterAll(() => t.close());

const mcp = () => postAs(t.http, tenant.testKey, '/mcp');
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('POST /mcp framing', () => {
  it('initializes with each handshake revision and negotiates an unknown one', async () => {
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await mcp()
        .send({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } },
        })
        .expect(200);
      expect(res.body.result.protocolVersion).toBe(version);
      expect(res.body.result.capabilities.tools).toBeDefined();
    }
    const old = await mcp().send({
      jsonrpc: '2.0',
      id: 2,
      method: 'initialize',
      params: { protocolVersion: '2024-11-05' },
    });
    expect(old.body.result.protocolVersion).toBe('2025-11-25');
  });

  it('answers a notification 202 with no body, ping, and batches', async () => {
    const note = await mcp().send({ jsonrpc: '2.0', method: 'notifications/initialized' }).expect(202);
    expect(note.text).toBe('');
    const batch = await mcp()
      .send([
        { jsonrpc: '2.0', id: 'a', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 'b', method: 'tools/list' },
        { jsonrpc: '2.0', id: 'c', method: 'nope' },
        { foo: 1 },
      ])
      .expect(200);
    expect(batch.body).toHaveLength(4);
    expect(batch.body[0]).toEqual({ jsonrpc: '2.0', id: 'a', result: {} });
    expect(batch.body[1].result.tools.length).toBe(8);
    expect(batch.body[2].error.code).toBe(-32601);
    expect(batch.body[3]).toMatchObject({ id: null, error: { code: -32600 } });
    await mcp()
      .send([{ jsonrpc: '2.0', method: 'notifications/initialized' }])
      .expect(202);
  });

  it('answers every JSON-RPC error code', async () => {
    const parse = await mcp().set('content-type', 'application/json').send('{"jsonrpc":').expect(400);
    expect(parse.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    const invalid = await mcp().send({ jsonrpc: '1.0', id: 1, method: 'ping' }).expect(400);
    expect(invalid.body).toMatchObject({ id: 1, error: { code: -32600 } });
    await mcp().send([]).expect(400);
    const tooMany = Array.from({ length: 21 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
    await mcp().send(tooMany).expect(400);
    const unknownMethod = await mcp()
      .send({ jsonrpc: '2.0', id: 2, method: 'sampling/createMessage' })
      .expect(200);
    expect(unknownMethod.body.error.code).toBe(-32601);
    const unknownTool = await mcp()
      .send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'delete_everything', arguments: {} },
      })
      .expect(200);
    expect(unknownTool.body.error.code).toBe(-32602);
  });

  it('uses the API envelope for auth errors, with the resource metadata challenge', async () => {
    const res = await t.http.post(api('/mcp')).send({ jsonrpc: '2.0', id: 1, method: 'ping' }).expect(401);
    expect(res.body.error.code).toBe('invalid_api_key');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/api/pub/v1/mcp"',
    );
  });

  it('answers rate_limited in the envelope; each tool call of a batch takes its own token', async () => {
    const slow = await createTenant(t.deps.pool, { rateLimitPerMinute: 3 });
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'list_projects', arguments: {} },
    });
    const batch = await postAs(t.http, slow.testKey, '/mcp')
      .send([call(1), call(2), call(3)])
      .expect(200);
    // The /mcp request and two calls fit in 3 a minute; the third call is a tool failure.
    expect(batch.body.map((r: { result: { isError: boolean } }) => r.result.isError)).toEqual([
      false,
      false,
      true,
    ]);
    expect(batch.body[2].result.content[0].text).toContain('rate_limited');
    const limited = await postAs(t.http, slow.testKey, '/mcp').send(call(4)).expect(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(limited.headers['retry-after']).toBeDefined();
  });

  it('publishes protected resource metadata at the root and for /mcp', async () => {
    const root = await t.http.get('/.well-known/oauth-protected-resource').expect(200);
    expect(root.body).toMatchObject({
      resource: 'http://127.0.0.1:1/api/pub/v1',
      authorization_servers: ['http://127.0.0.1:1/oauth'],
    });
    const forMcp = await t.http.get('/.well-known/oauth-protected-resource/api/pub/v1/mcp').expect(200);
    expect(forMcp.body.resource).toBe('http://127.0.0.1:1/api/pub/v1/mcp');
    expect(forMcp.body.scopes_supported).toContain('tasks.read');
  });

  it('challenges a missing scope with insufficient_scope', async () => {
    const narrow = await tenant.key({ livemode: false, scopeLevel: 'operation', operations: ['tasks.read'] });
    const res = await t.http.get(api('/staff')).set(bearer(narrow.secret)).expect(403);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer error="insufficient_scope", scope="staff.list", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource"',
    );
  });

  it('answers GET and DELETE with 405', async () => {
    const get = await t.http.get(api('/mcp')).set(bearer(tenant.testKey)).expect(405);
    expect(get.headers.allow).toBe('POST');
    const del = await t.http.delete(api('/mcp')).set(bearer(tenant.testKey)).expect(405);
    expect(del.body.error.code).toBe('method_not_allowed');
  });

  it('refuses a browser origin that is not allowed, and allows its own, a listed one and none', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const bad = await mcp().set('Origin', 'https://evil.example').send(ping).expect(403);
    expect(bad.body.error.code).toBe('origin_not_allowed');
    await mcp().set('Origin', 'http://127.0.0.1:1').send(ping).expect(200);
    await mcp().set('Origin', 'https://inspector.example').send(ping).expect(200);
    await mcp().send(ping).expect(200);
  });
});

describe('the stateless 2026-07-28 revision', () => {
  const stateless = () => mcp().set('MCP-Protocol-Version', '2026-07-28');

  it('serves server/discover and tools/list with _meta and routing headers', async () => {
    const discover = await stateless()
      .set('Mcp-Method', 'server/discover')
      .send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } })
      .expect(200);
    expect(discover.body.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18'],
    });
    const list = await stateless()
      .set('Mcp-Method', 'tools/list')
      .send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: meta } })
      .expect(200);
    expect(list.body.result.resultType).toBe('complete');
    expect(list.body.result.tools.map((x: { name: string }) => x.name)).toContain('get_task');
    const call = await stateless()
      .set('Mcp-Method', 'tools/call')
      .set('Mcp-Name', 'list_projects')
      .send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'list_projects', arguments: {}, _meta: meta },
      })
      .expect(200);
    expect(call.body.result.structuredContent.projects[0].id).toBe(tenant.projectId);
  });

  it('answers 400 when the header and _meta disagree, headers are missing or wrong, or the version is unsupported', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } };
    const mismatch = await mcp()
      .set('MCP-Protocol-Version', '2025-11-25')
      .set('Mcp-Method', 'tools/list')
      .send(body)
      .expect(400);
    expect(mismatch.body.error.code).toBe(-32600);
    await mcp().set('Mcp-Method', 'tools/list').send(body).expect(400);
    await stateless().send(body).expect(400);
    await stateless().set('Mcp-Method', 'tools/call').send(body).expect(400);
    await stateless()
      .set('Mcp-Method', 'tools/list')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
      .expect(400);
    await stateless()
      .set('Mcp-Method', 'tools/call')
      .set('Mcp-Name', 'get_task')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_staff', _meta: meta } })
      .expect(400);
    const unsupported = await mcp()
      .set('MCP-Protocol-Version', '2099-01-01')
      .send({ jsonrpc: '2.0', id: 1, method: 'ping' })
      .expect(400);
    expect(unsupported.body.error.data.supported).toEqual(['2026-07-28', '2025-11-25', '2025-06-18']);
    expect(unsupported.body.error.message).toContain('2025-06-18');
  });
});
