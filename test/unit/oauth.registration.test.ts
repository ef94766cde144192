import { describe, expect, it } from '@jest/globals';

import { redirectUriProblem } from '../../shared/oauth/registration.ts';

describe('redirectUriProblem', () => {
  it.each([
    'https://app.example.com/callback',
    'http://localhost:8080/cb',
    'http://127.0.0.1/cb',
    'com.example.app:/oauth',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeNull();
  });
  it.each([
    ['http://app.example.com/cb', 'localhost'],
    ['https://app.example.com/cb#x', 'fragment'],
    ['https://*.example.com/cb', 'wildcard'],
    ['javascript:alert(1)', 'javascript'],
    ['myapp:/cb', 'reverse-domain'],
    ['/relative', 'absolute'],
  ])('refuses %s', (uri, reason) => {
    expect(redirectUriProblem(uri)).toContain(reason);
  });
});
