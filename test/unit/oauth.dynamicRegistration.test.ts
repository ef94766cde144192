import { describe, expect, it } from '@jest/globals';

import { clientIdUrlProblem, defaultMetadataFetch } from '../../shared/oauth/clientMetadataDocument.ts';
import {
  isLoopbackRedirect,
  parseDynamicClient,
  withoutPort,
} from '../../shared/oauth/dynamicRegistration.ts';

const available = ['tasks.read', 'staff.list', 'brain.search'];
const sensitive = ['brain.search'];

describe('parseDynamicClient', () => {
  it('defaults to the non-sensitive scopes and the identity scopes, and names a nameless app by its host', () => {
    const client = parseDynamicClient({ redirect_uris: ['https://app.example/cb'] }, available, sensitive);
    expect(client.scopes).toEqual([
      'tasks.read',
      'staff.list',
      'openid',
      'profile',
      'email',
      'offline_access',
    ]);
    expect(client.name).toBe('App at app.example');
  });

  it('keeps the scopes asked for, and refuses unknown ones', () => {
    const body = {
      redirect_uris: ['http://127.0.0.1/cb'],
      scope: 'tasks.read offline_access',
      client_name: 'Cli',
    };
    expect(parseDynamicClient(body, available, sensitive)).toEqual({
      name: 'Cli',
      redirectUris: ['http://127.0.0.1/cb'],
      scopes: ['tasks.read', 'offline_access'],
    });
    expect(() => parseDynamicClient({ ...body, scope: 'admin' }, available, sensitive)).toThrow(
      'Unknown scopes',
    );
  });

  it('refuses confidential clients, other grants and bad redirect URIs', () => {
    const uris = { redirect_uris: ['https://app.example/cb'] };
    expect(() =>
      parseDynamicClient({ ...uris, token_endpoint_auth_method: 'client_secret_post' }, available, sensitive),
    ).toThrow('public clients');
    expect(() =>
      parseDynamicClient({ ...uris, grant_types: ['client_credentials'] }, available, sensitive),
    ).toThrow('grant_types');
    expect(() => parseDynamicClient({ redirect_uris: [] }, available, sensitive)).toThrow('redirect_uris');
    expect(() =>
      parseDynamicClient({ redirect_uris: ['http://app.example/cb'] }, available, sensitive),
    ).toThrow('localhost');
  });
});

describe('loopback redirects', () => {
  it('match whatever the port', () => {
    expect(isLoopbackRedirect('http://127.0.0.1:5173/cb')).toBe(true);
    expect(isLoopbackRedirect('http://[::1]/cb')).toBe(true);
    expect(isLoopbackRedirect('https://127.0.0.1/cb')).toBe(false);
    expect(withoutPort('http://127.0.0.1:5173/cb')).toBe(withoutPort('http://127.0.0.1/cb'));
  });
});

describe('client_id URLs of metadata documents', () => {
  it('must be https with a path, no fragment, credentials or dot segments', () => {
    expect(clientIdUrlProblem('https://app.example/client.json', defaultMetadataFetch)).toBeNull();
    expect(clientIdUrlProblem('http://app.example/client.json', defaultMetadataFetch)).toBe('must use https');
    expect(clientIdUrlProblem('https://app.example/', defaultMetadataFetch)).toBe('must have a path');
    expect(clientIdUrlProblem('https://app.example/c#x', defaultMetadataFetch)).toBe(
      'must not have a fragment',
    );
    expect(clientIdUrlProblem('https://u:p@app.example/c', defaultMetadataFetch)).toBe(
      'must not carry credentials',
    );
    // The token endpoint would not know a longer one, and each is a key of the document cache.
    const long = `https://app.example/${'c'.repeat(2048)}`;
    expect(clientIdUrlProblem(long, defaultMetadataFetch)).toBe('must not be longer than 2048 characters');
  });
});
